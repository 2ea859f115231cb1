/** The wire interface version this build implements (the seed's 1.0.0). */
export const VERSION = '1.0.0'
