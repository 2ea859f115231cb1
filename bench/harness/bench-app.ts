/** The mini-program the bench's code2session server knows; its credentials are public on purpose. */
export const BENCH_APP = { appId: 'wx-bench-app', appSecret: 'bench-app-secret' } as const
