// The "May import" column of docs/architecture.md, checked by `npm run check` (npm run deps).
// Every import of a module under src/ must match one `allowed` rule; a new edge between folders
// is a change to the architecture, made here and in the table together.

/** A folder of src/ (with its trailing slash) or a top-level module (without .ts). */
const mod = (name) => (name.endsWith('/') ? `^src/${name}` : `^src/${name}\\.ts$`)
const any = (...names) => names.map(mod)

/** `from` may import `to` (folders or modules), for values and types alike. */
const may = (from, ...to) => ({ from: { path: any(...[from].flat()) }, to: { path: any(...to) } })
/** `from` may import types, and only types, from `to`. */
const typesFrom = (from, ...to) => ({
  from: { path: any(...[from].flat()) },
  to: { path: any(...to), dependencyTypes: ['type-only'] },
})

// The stores, one per table: only accounts/ (cross-domain changes), maintenance/ and the domain
// itself write through them (rule 2 of docs/architecture.md).
const STORES = [
  '^src/users/store\\.ts$',
  '^src/identities/store\\.ts$',
  '^src/sessions/store\\.ts$',
  '^src/university/store\\.ts$',
  '^src/mail/outbox\\.ts$',
  '^src/mail/caps\\.ts$',
  '^src/audit/store\\.ts$',
  '^src/events/',
]

// The steps of the account changes, and the modules that may import them: the unit of work, and
// the steps themselves (they share helpers).
const STEPS = '^src/accounts/(lifecycle|university|import|people)\\.ts$'
const STEPS_AND_CHANGES = '^src/accounts/(changes|lifecycle|university|import|people)\\.ts$'

module.exports = {
  allowed: [
    // Packages and Node's own modules.
    { from: {}, to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'core'] } },
    // Within one folder.
    { from: { path: '^src/([^/]+)/' }, to: { path: '^src/$1/' } },
    // The clock and the configuration's types are everyone's.
    typesFrom(
      [
        'accounts/',
        'audit/',
        'backup/',
        'console/',
        'events/',
        'http/',
        'mail/',
        'maintenance/',
        'original/',
        'sandbox/',
        'secrets-at-rest',
        'sessions/',
        'university/',
      ],
      'clock',
      'config',
    ),

    may('main', 'cli/'),
    may(
      ['services', 'composition/', 'app', 'cli/'],
      'accounts/',
      'app',
      'audit/',
      'backup/',
      'clock',
      'composition/',
      'config',
      'console/',
      'db/',
      'errors',
      'events/',
      'http/',
      'identities/',
      'lib/',
      'mail/',
      'maintenance/',
      'messenger/',
      'operations/',
      'original/',
      'sandbox/',
      'secrets-at-rest',
      'services',
      'sessions/',
      'university/',
      'version',
    ),
    may('config', 'config/', 'lib/'),
    // The platforms name their own base URL variables (docs/identities.md, "Adding a platform").
    may('config/', 'lib/', 'messenger/platforms/'),
    may('secrets-at-rest', 'lib/'),
    may('http/', 'errors', 'lib/', 'db/failures', 'events/openapi'),
    typesFrom('http/', 'sessions/'),
    may('users/', 'db/'),
    may('identities/', 'db/'),
    may('sessions/', 'lib/', 'db/', 'accounts/', 'http/', 'errors', 'audit/audit'),
    typesFrom('sessions/', 'events/', 'messenger/'),
    // GET /session's schema names the platforms.
    may('sessions/routes/session', 'messenger/platforms/'),
    may('university/', 'lib/', 'db/', 'accounts/', 'http/', 'errors', 'audit/audit', 'mail/sealed'),
    typesFrom('university/', 'events/', 'mail/transport', 'mail/caps'),
    may('mail/', 'lib/', 'db/', 'errors'),
    may('events/', 'lib/', 'db/'),
    // The events' schemas name the platforms.
    may('events/openapi', 'messenger/platforms/'),
    may('messenger/', 'lib/', 'errors'),
    typesFrom('messenger/', 'sessions/service'),
    { from: { path: mod('accounts/') }, to: { path: STORES } },
    // The touch rule is pure: which sessions are live, and the day a use counts for.
    may('accounts/', 'db/', 'audit/audit', 'sessions/touch-rule'),
    // The access request's own route (GET /user/data) answers with the API's schemas and errors.
    may('accounts/access-routes', 'http/', 'errors'),
    typesFrom('accounts/', 'sessions/service', 'mail/'),
    may('maintenance/', 'lib/', 'db/'),
    { from: { path: mod('maintenance/') }, to: { path: STORES } },
    typesFrom('maintenance/', 'sessions/service'),
    may('sandbox/', 'lib/', 'http/'),
    typesFrom('sandbox/', 'mail/transport'),
    may('audit/', 'lib/', 'db/'),
    may('backup/', 'lib/', 'db/'),
    may('operations/', 'lib/', 'http/', 'errors'),
    may('original/', 'lib/', 'db/', 'accounts/'),
    typesFrom('original/', 'audit/audit', 'events/', 'sessions/store'),
    // The console reads through the services and its own read queries, and acts through the
    // services alone (their types only).
    may('console/', 'lib/', 'db/', 'http/locale', 'audit/audit', 'errors'),
    typesFrom(
      'console/',
      'accounts/',
      'events/service',
      'mail/outbox-service',
      'sessions/service',
      'university/oidc-client',
    ),
  ],
  allowedSeverity: 'error',
  forbidden: [
    {
      name: 'account-steps-through-changes',
      comment:
        'The steps of an account change (accounts/lifecycle.ts, university.ts, import.ts) run only ' +
        'inside the unit of work, accounts/changes.ts, which writes the audit and lifecycle events ' +
        'in the same transaction and wakes the workers after it (docs/architecture.md). Call ' +
        'AccountChanges instead.',
      severity: 'error',
      from: { path: '^src/', pathNot: STEPS_AND_CHANGES },
      to: { path: STEPS },
    },
    {
      name: 'no-circular',
      comment: 'Modules that import each other read as one; make them one, or cut the loop.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    // Type-only imports count too: the table says which folders may see which types.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
  },
}
