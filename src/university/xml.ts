import { DOMParser, type Document, type Element, type Node } from '@xmldom/xmldom'

/**
 * Parsing of what a CAS server or SAML IdP sends, with a real XML parser (@xmldom/xmldom) and the
 * rules docs/university-providers.md states: a document type declaration (DTD) is refused before
 * anything is read from the document (entity expansion, external entities), and so is malformed
 * XML. Throws `XmlRefused` with a reason fit for the log.
 */
export class XmlRefused extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'XmlRefused'
  }
}

const ELEMENT_NODE = 1
const COMMENT_NODE = 8
const PROCESSING_INSTRUCTION_NODE = 7
const DOCUMENT_TYPE_NODE = 10

export function parseXml(text: string, what: string): Document {
  let document: Document
  try {
    document = new DOMParser({
      onError: (level, message) => {
        // Warnings (an unknown entity in an attribute…) are refused as well: none comes from a
        // well-formed answer.
        throw new XmlRefused(
          `${what} is not well-formed XML (${level}: ${String(message).slice(0, 120)})`,
        )
      },
    }).parseFromString(text, 'text/xml')
  } catch (error) {
    if (error instanceof XmlRefused) throw error
    throw new XmlRefused(`${what} is not well-formed XML (${String(error).slice(0, 120)})`)
  }
  for (let node = document.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === DOCUMENT_TYPE_NODE) throw new XmlRefused(`${what} has a DTD`)
  }
  if (document.doctype !== null) throw new XmlRefused(`${what} has a DTD`)
  if (document.documentElement === null) throw new XmlRefused(`${what} has no root element`)
  return document
}

/** The element children of `parent`, optionally only those of one namespace and local name. */
export function childElements(parent: Node, namespace?: string, localName?: string): Element[] {
  const found: Element[] = []
  for (let node = parent.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType !== ELEMENT_NODE) continue
    const element = node as Element
    if (namespace !== undefined && element.namespaceURI !== namespace) continue
    if (localName !== undefined && element.localName !== localName) continue
    found.push(element)
  }
  return found
}

/** Every element below `root` (itself included) with this namespace and local name. */
export function descendants(root: Element, namespace: string, localName: string): Element[] {
  return Array.from(root.getElementsByTagNameNS(namespace, localName))
}

/**
 * The text of an element that must hold only text: a comment, a processing instruction or a child
 * element inside it is refused, so no parser can read a shorter value than the one signed
 * (the comment-truncation trick: `<NameID>admin@uni.example<!---->.evil.example</NameID>`).
 */
export function textOnly(element: Element, what: string): string {
  let text = ''
  for (let node = element.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === COMMENT_NODE) throw new XmlRefused(`${what} holds a comment`)
    if (node.nodeType === PROCESSING_INSTRUCTION_NODE) {
      throw new XmlRefused(`${what} holds a processing instruction`)
    }
    if (node.nodeType === ELEMENT_NODE) throw new XmlRefused(`${what} holds an element`)
    text += node.nodeValue ?? ''
  }
  return text.trim()
}

/** Whether anything below `root` is a comment or a processing instruction. */
export function hasCommentOrInstruction(root: Node): boolean {
  for (let node = root.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === COMMENT_NODE || node.nodeType === PROCESSING_INSTRUCTION_NODE) {
      return true
    }
    if (node.nodeType === ELEMENT_NODE && hasCommentOrInstruction(node)) return true
  }
  return false
}
