import type { Cipher } from '../lib/encryption.js'
import type { Mail } from './transport.js'

/**
 * A mail as the outbox keeps it: its bodies encrypted, since they carry a live link and a database
 * file, its write-ahead log or a dump must not give that link away.
 */
export function sealMail(cipher: Cipher, mail: Mail): Mail {
  return { ...mail, text: cipher.encrypt(mail.text), html: cipher.encrypt(mail.html) }
}

/** The mail to send, from its sealed bodies. */
export function openMail(cipher: Cipher, sealed: Mail): Mail {
  return { ...sealed, text: cipher.decrypt(sealed.text), html: cipher.decrypt(sealed.html) }
}
