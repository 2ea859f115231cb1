// The few parts of oidc-provider (which ships no types) that the test helper uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export interface Interaction {
    uid: string
    params: Record<string, unknown>
    prompt: { name: string; details: Record<string, unknown> }
  }

  export interface GrantInstance {
    addOIDCScope(scope: string): void
    save(): Promise<string>
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>
    Grant: new (properties: { accountId: string; clientId: string }) => GrantInstance
    issuer: string
  }
}
