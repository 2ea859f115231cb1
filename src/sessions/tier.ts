/** The two registration tiers, lowest first. */
export type Tier = 'messenger-registered' | 'university-registered'

/**
 * The one tier rule (docs/sessions.md, "Tier"): `university-registered` while the user holds a university
 * link younger than UNIVERSITY_LINK_MAX_AGE (null: links never lapse), `messenger-registered`
 * otherwise. `GET /session`, the tier guard and `campusgate users show` all ask this function.
 */
export function tierOf(
  universityLinkedAt: number | null,
  now: number,
  linkMaxAgeMs: number | null,
): Tier {
  const linked =
    universityLinkedAt !== null &&
    (linkMaxAgeMs === null || now - universityLinkedAt < linkMaxAgeMs)
  return linked ? 'university-registered' : 'messenger-registered'
}
