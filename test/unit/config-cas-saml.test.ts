import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'

// docs/university-providers.md, "CAS" and "SAML": UNIVERSITY_PROTOCOL=cas|saml and their
// variables, each bad one named on its own line.

const KEY = Buffer.alloc(32, 1).toString('base64')
const MESSENGER = { MESSENGER_API_BASE_URL: 'https://messenger.example' }

/** Start-up refuses `env` with exactly these lines. */
function refusesWith(env: Record<string, string>, lines: string[]): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) =>
      error instanceof ConfigError && assert.deepEqual(error.problems, lines) === undefined,
  )
}

const dir = mkdtempSync(join(tmpdir(), 'campusgate-config-'))
const metadataFile = join(dir, 'idp.xml')
writeFileSync(metadataFile, '<md:EntityDescriptor/>')

/** An RSA key and its self-signed certificate, by openssl, as an operator would make them. */
function keyPair(name: string): { key: string; cert: string } {
  const key = join(dir, `${name}.key`)
  const cert = join(dir, `${name}.crt`)
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  )
  return { key, cert }
}

describe('loadConfig: CAS', () => {
  it('reads the server and the version, with CAS 3 and the CAS attribute defaults', () => {
    const config = loadConfig({
      ...MESSENGER,
      UNIVERSITY_PROTOCOL: 'cas',
      UNIVERSITY_CAS_URL: 'https://cas.example.edu.cn/cas/',
    })
    assert.deepEqual(config.university.cas, { url: 'https://cas.example.edu.cn/cas', version: 3 })
    assert.equal(config.university.saml, null)
    assert.equal(config.university.clientId, 'campusgate')
    assert.deepEqual(config.university.attributes, {
      subject: ['user'],
      email: ['mail'],
      name: ['displayName', 'cn'],
      isStudent: { names: ['eduPersonAffiliation'], value: 'student' },
    })
    assert.deepEqual(config.sandbox, { messenger: false, university: false })
    assert.equal(
      loadConfig({
        ...MESSENGER,
        UNIVERSITY_PROTOCOL: 'cas',
        UNIVERSITY_CAS_URL: 'https://cas.example.edu.cn/cas',
        UNIVERSITY_CAS_VERSION: '2',
      }).university.cas?.version,
      2,
    )
  })

  it('without a server, the sandbox is the CAS server', () => {
    const config = loadConfig({ UNIVERSITY_PROTOCOL: 'cas' })
    assert.deepEqual(config.sandbox, { messenger: true, university: true })
    assert.deepEqual(config.university.cas, {
      url: 'http://127.0.0.1:3000/_sandbox/cas',
      version: 3,
    })
  })

  it('names each bad variable', () => {
    refusesWith(
      {
        ...MESSENGER,
        UNIVERSITY_PROTOCOL: 'cas',
        UNIVERSITY_CAS_URL: 'cas.example.edu.cn',
        UNIVERSITY_CAS_VERSION: '1',
        UNIVERSITY_SAML_SP_ENTITY_ID: 'https://sp.example',
        UNIVERSITY_ATTRIBUTES: 'subject=uid,phone=mobile',
        UNIVERSITY_CALLBACK_BINDING: 'none',
        UNIVERSITY_CALLBACK_ALLOWED_IPS: '10.0.0.1',
      },
      [
        'UNIVERSITY_CAS_URL: "cas.example.edu.cn" is not a URL',
        'UNIVERSITY_CALLBACK_BINDING: must be "cookie" with UNIVERSITY_PROTOCOL=cas',
        'UNIVERSITY_CAS_VERSION: must be "2" or "3"',
        'UNIVERSITY_SAML_SP_ENTITY_ID: is used only with UNIVERSITY_PROTOCOL=saml',
        'UNIVERSITY_ATTRIBUTES: "phone=mobile" is not field=attribute with a field among subject, email, name, isStudent (e.g. subject=uid,email=mail,name=cn,isStudent=eduPersonAffiliation:student)',
      ],
    )
  })

  it('production: an https server', () => {
    refusesWith(
      {
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://campusgate@db.example.edu/campusgate',
        PUBLIC_BASE_URL: 'https://campusgate.example.edu',
        SMTP_URL: 'smtps://mail.example.edu:465',
        MESSENGER_ALLOWED_APP_IDS: 'wx-app',
        MESSENGER_APP_SECRETS: 'wx-app:secret',
        DATA_ENCRYPTION_KEY: KEY,
        UNIVERSITY_PROTOCOL: 'cas',
        UNIVERSITY_CAS_URL: 'http://cas.example.edu.cn/cas',
      },
      ['UNIVERSITY_CAS_URL: must be an https: URL when NODE_ENV=production'],
    )
  })
})

describe('loadConfig: SAML', () => {
  it('reads the metadata and defaults the SP entity id under PUBLIC_BASE_URL', () => {
    const config = loadConfig({
      ...MESSENGER,
      PUBLIC_BASE_URL: 'https://campusgate.example.ac.uk',
      UNIVERSITY_PROTOCOL: 'saml',
      UNIVERSITY_SAML_IDP_METADATA: metadataFile,
    })
    assert.deepEqual(config.university.saml, {
      idpMetadata: metadataFile,
      spEntityId: 'https://campusgate.example.ac.uk/authorize/university/saml',
      spKey: null,
      spCert: null,
    })
    assert.deepEqual(config.university.attributes?.subject, [
      'urn:oasis:names:tc:SAML:attribute:subject-id',
      'eduPersonPrincipalName',
      'nameid',
    ])
  })

  it('takes a key and its certificate, inline or from files', () => {
    const { key, cert } = keyPair('sp')
    const config = loadConfig({
      ...MESSENGER,
      UNIVERSITY_PROTOCOL: 'saml',
      UNIVERSITY_SAML_IDP_METADATA: 'https://idp.example.ac.uk/metadata',
      UNIVERSITY_SAML_SP_ENTITY_ID: 'https://campusgate.example.ac.uk/sp',
      UNIVERSITY_SAML_SP_KEY: key,
      UNIVERSITY_SAML_SP_CERT: cert,
    })
    assert.match(config.university.saml?.spKey ?? '', /BEGIN PRIVATE KEY/)
    assert.match(config.university.saml?.spCert ?? '', /BEGIN CERTIFICATE/)
    assert.equal(config.university.saml?.spEntityId, 'https://campusgate.example.ac.uk/sp')
  })

  it('names each bad variable', () => {
    const one = keyPair('one')
    const other = keyPair('other')
    refusesWith(
      {
        ...MESSENGER,
        UNIVERSITY_PROTOCOL: 'saml',
        UNIVERSITY_SAML_IDP_METADATA: 'idp.xml',
        UNIVERSITY_CAS_VERSION: '3',
        UNIVERSITY_SAML_SP_KEY: one.key,
        UNIVERSITY_SAML_SP_CERT: other.cert,
        UNIVERSITY_ATTRIBUTES: 'subject=uid,subject=mail',
      },
      [
        'UNIVERSITY_SAML_IDP_METADATA: must be an http(s) URL or the absolute path of a file',
        'UNIVERSITY_CAS_VERSION: is used only with UNIVERSITY_PROTOCOL=cas',
        'UNIVERSITY_SAML_SP_CERT: is not the certificate of UNIVERSITY_SAML_SP_KEY',
        'UNIVERSITY_ATTRIBUTES: subject is named twice',
      ],
    )
    refusesWith(
      {
        ...MESSENGER,
        UNIVERSITY_PROTOCOL: 'saml',
        UNIVERSITY_SAML_IDP_METADATA: join(dir, 'missing.xml'),
        UNIVERSITY_SAML_SP_KEY: one.key,
      },
      [
        `UNIVERSITY_SAML_IDP_METADATA: cannot read ${JSON.stringify(join(dir, 'missing.xml'))} (ENOENT)`,
        'UNIVERSITY_SAML_SP_CERT: set both UNIVERSITY_SAML_SP_KEY and UNIVERSITY_SAML_SP_CERT, or neither',
      ],
    )
  })

  it('production: the metadata is required, over https or from a file, and PUBLIC_BASE_URL is https', () => {
    const production = {
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://campusgate@db.example.edu/campusgate',
      SMTP_URL: 'smtps://mail.example.edu:465',
      MESSENGER_ALLOWED_APP_IDS: 'wx-app',
      MESSENGER_APP_SECRETS: 'wx-app:secret',
      DATA_ENCRYPTION_KEY: KEY,
      UNIVERSITY_PROTOCOL: 'saml',
    }
    refusesWith({ ...production, PUBLIC_BASE_URL: 'http://campusgate.example.edu' }, [
      'UNIVERSITY_SAML_IDP_METADATA: a university provider is required when NODE_ENV=production (no sandbox there)',
      'PUBLIC_BASE_URL: an https: URL is required when NODE_ENV=production (the attempt cookie is Secure only over https)',
    ])
    refusesWith(
      {
        ...production,
        PUBLIC_BASE_URL: 'https://campusgate.example.edu',
        UNIVERSITY_SAML_IDP_METADATA: 'http://idp.example.ac.uk/metadata',
      },
      [
        'UNIVERSITY_SAML_IDP_METADATA: must be an https: URL or a file when NODE_ENV=production (the IdP signing keys come from it)',
      ],
    )
    const config = loadConfig({
      ...production,
      PUBLIC_BASE_URL: 'https://campusgate.example.edu',
      UNIVERSITY_SAML_IDP_METADATA: metadataFile,
    })
    assert.equal(config.university.protocol, 'saml')
  })
})

describe('UNIVERSITY_ATTRIBUTES', () => {
  const attributes = (value: string, protocol = 'saml') =>
    loadConfig({ UNIVERSITY_PROTOCOL: protocol, UNIVERSITY_ATTRIBUTES: value }).university
      .attributes

  it('maps each field; the others keep their defaults', () => {
    assert.deepEqual(
      attributes(
        'subject=uid,email=mail,name=cn|displayName,isStudent=eduPersonAffiliation:student',
        'cas',
      ),
      {
        subject: ['uid'],
        email: ['mail'],
        name: ['cn', 'displayName'],
        isStudent: { names: ['eduPersonAffiliation'], value: 'student' },
      },
    )
    assert.deepEqual(attributes('name=givenName')?.email, ['mail'])
  })

  it('reads urn:oid names, with and without a value, and a bare boolean attribute', () => {
    assert.deepEqual(attributes('isStudent=urn:oid:1.3.6.1.4.1.5923.1.1.1.9:student')?.isStudent, {
      names: ['urn:oid:1.3.6.1.4.1.5923.1.1.1.9'],
      value: 'student',
    })
    assert.deepEqual(attributes('isStudent=urn:oid:1.3.6.1.4.1.5923.1.1.1.1')?.isStudent, {
      names: ['urn:oid:1.3.6.1.4.1.5923.1.1.1.1'],
      value: null,
    })
    assert.deepEqual(attributes('isStudent=isStudent')?.isStudent, {
      names: ['isStudent'],
      value: null,
    })
    assert.deepEqual(attributes('subject=urn:oid:1.3.6.1.4.1.5923.1.1.1.6')?.subject, [
      'urn:oid:1.3.6.1.4.1.5923.1.1.1.6',
    ])
  })

  it('is refused with the other protocols, and when malformed', () => {
    refusesWith({ UNIVERSITY_ATTRIBUTES: 'subject=uid' }, [
      'UNIVERSITY_ATTRIBUTES: is used only with UNIVERSITY_PROTOCOL=cas or saml',
    ])
    refusesWith({ UNIVERSITY_PROTOCOL: 'cas', UNIVERSITY_ATTRIBUTES: 'subject=' }, [
      'UNIVERSITY_ATTRIBUTES: subject="": "" is not an attribute name',
    ])
    refusesWith({ UNIVERSITY_PROTOCOL: 'cas', UNIVERSITY_ATTRIBUTES: 'isStudent=affiliation:' }, [
      'UNIVERSITY_ATTRIBUTES: isStudent="affiliation:": the value after ":" is empty or too long',
    ])
  })
})
