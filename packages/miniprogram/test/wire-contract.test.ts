// The kit's copies of campusgate's interface against campusgate's own OpenAPI document, served by
// the running app: a change on either side fails here until the other follows.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import ts from 'typescript'
import { MEDIA_TYPE, TIERS, WIRE_ERRORS } from 'campusgate-miniprogram'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'

type Schema = {
  type?: string | string[]
  items?: Schema
  enum?: string[]
  required?: string[]
  properties?: Record<string, Schema>
}
type Operation = {
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>
}
type Document = { paths: Record<string, Record<string, Operation>> }

/** A type reduced to what JSON carries: what both sides are compared by. */
type Shape =
  | 'string'
  | 'boolean'
  | { enum: string[] }
  | { properties: Record<string, { shape: Shape; required: boolean }> }

function schemaShape(schema: Schema): Shape {
  if (schema.enum !== undefined) return { enum: [...schema.enum].sort() }
  // `[type, 'null']`: compared as the type (the declarations' nulls are set aside the same way).
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((type) => type !== 'null')
    assert.equal(types.length, 1, `one type besides null: ${JSON.stringify(schema)}`)
    return schemaShape({ ...schema, type: types[0] })
  }
  if (schema.type === 'string' || schema.type === 'boolean') return schema.type
  assert.equal(schema.type, 'object', `a schema the kit can copy: ${JSON.stringify(schema)}`)
  const required = new Set(schema.required ?? [])
  const properties: Record<string, { shape: Shape; required: boolean }> = {}
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    properties[name] = { shape: schemaShape(property), required: required.has(name) }
  }
  return { properties }
}

/** The kit's declarations, as an app compiles against them: its built index.d.ts. */
function declaredShapes(): (name: string) => Shape {
  const entry = createRequire(import.meta.url).resolve('campusgate-miniprogram/package.json')
  const index = entry.replace(/package\.json$/, 'miniprogram_dist/index.d.ts')
  const program = ts.createProgram([index], { strict: true, noEmit: true, skipLibCheck: true })
  const checker = program.getTypeChecker()
  const module = checker.getSymbolAtLocation(program.getSourceFile(index)!)!
  const exports = checker.getExportsOfModule(module)

  function shape(type: ts.Type): Shape {
    const flags = type.getFlags()
    if (flags & ts.TypeFlags.String) return 'string'
    if (flags & ts.TypeFlags.Boolean) return 'boolean'
    if (type.isUnion() && type.types.every((member) => member.isStringLiteral())) {
      return { enum: type.types.map((member) => member.value).sort() }
    }
    assert.ok(flags & ts.TypeFlags.Object, `a type JSON carries: ${checker.typeToString(type)}`)
    const properties: Record<string, { shape: Shape; required: boolean }> = {}
    for (const property of checker.getPropertiesOfType(type)) {
      const optional = (property.getFlags() & ts.SymbolFlags.Optional) !== 0
      const declared = checker.getNonNullableType(checker.getTypeOfSymbol(property))
      properties[property.getName()] = { shape: shape(declared), required: !optional }
    }
    return { properties }
  }

  return (name) => {
    const symbol = exports.find((exported) => exported.getName() === name)
    assert.ok(symbol !== undefined, `the kit exports ${name}`)
    return shape(checker.getDeclaredTypeOfSymbol(symbol))
  }
}

describe("the mini-program kit's copy of the wire against campusgate's OpenAPI document", () => {
  let service: RunningService
  let document: Document
  let declared: (name: string) => Shape

  before(async () => {
    service = await startService()
    const served = await call(`${service.url}/openapi.json`)
    assert.equal(served.status, 200)
    document = served.body as Document
    declared = declaredShapes()
  })
  after(() => service.close())

  const operation = (method: string, path: string): Operation => {
    const found = document.paths[path]?.[method]
    assert.ok(found !== undefined, `${method.toUpperCase()} ${path} is documented`)
    return found
  }
  const answer = (op: Operation, status: number): Record<string, { schema: Schema }> => {
    const content = op.responses[String(status)]?.content
    assert.ok(content !== undefined, `a ${status} with a body is documented`)
    return content
  }
  const requestSchema = (op: Operation): Schema => {
    const content = op.requestBody?.content ?? {}
    assert.ok(MEDIA_TYPE in content || 'application/json' in content)
    return (content[MEDIA_TYPE] ?? content['application/json']).schema
  }

  it('names the media type every answer of the routes the kit calls comes in', () => {
    for (const [method, path, status] of [
      ['get', '/session', 200],
      ['post', '/register/messenger', 200],
      ['post', '/register/university', 200],
      ['post', '/logout', 200],
      ['delete', '/user', 200],
      ['get', '/sessions', 200],
      ['delete', '/sessions/{id}', 200],
    ] as const) {
      assert.deepEqual(Object.keys(answer(operation(method, path), status)), [MEDIA_TYPE])
    }
  })

  it('acts on error codes campusgate answers, with the status each comes with', () => {
    // Each on one of the calls the kit makes for every request: GET /session, or the
    // registration its login sends.
    const documented = (method: string, path: string, status: number) =>
      answer(operation(method, path), status)[MEDIA_TYPE].schema.properties?.error?.enum ?? []
    for (const { status, code } of Object.values(WIRE_ERRORS)) {
      const codes = [
        ...documented('get', '/session', status),
        ...documented('post', '/register/messenger', status),
      ]
      assert.ok(
        codes.includes(code),
        `${status} ${code} is documented on GET /session or POST /register/messenger`,
      )
    }
  })

  it("has the session's tiers in campusgate's order", () => {
    const tier = answer(operation('get', '/session'), 200)[MEDIA_TYPE].schema.properties?.tier
    assert.deepEqual(tier?.enum, [...TIERS])
  })

  it("declares the session, the registration and what it sends in campusgate's shapes", () => {
    const session = answer(operation('get', '/session'), 200)[MEDIA_TYPE].schema
    assert.deepEqual(declared('Session'), schemaShape(session))
    const messenger = operation('post', '/register/messenger')
    assert.deepEqual(declared('RegisterMessengerBody'), schemaShape(requestSchema(messenger)))
    const registered = answer(messenger, 200)[MEDIA_TYPE].schema
    assert.deepEqual(declared('RegisterMessengerAnswer'), schemaShape(registered))
    const university = operation('post', '/register/university')
    assert.deepEqual(declared('RegisterUniversityBody'), schemaShape(requestSchema(university)))
  })

  it("declares a device's session as GET /sessions lists it (issue 47)", () => {
    const listed = answer(operation('get', '/sessions'), 200)[MEDIA_TYPE].schema
    assert.deepEqual(listed.required, ['sessions'])
    assert.deepEqual(declared('DeviceSession'), schemaShape(listed.properties!.sessions.items!))
    for (const [method, path] of [
      ['get', '/sessions'],
      ['delete', '/sessions/{id}'],
    ] as const) {
      assert.deepEqual(Object.keys(answer(operation(method, path), 200)), [MEDIA_TYPE])
    }
    const unknown = answer(operation('delete', '/sessions/{id}'), 404)[MEDIA_TYPE].schema
    assert.ok(unknown.properties?.error?.enum?.includes('@not-found/unknown-session'))
  })
})
