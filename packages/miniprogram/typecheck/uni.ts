// Compiled, never run: uni-app's `uni`, as @dcloudio/types declares it, fits the kit's Platform,
// and the kit's request options are options its request takes.
import { createCampusgate, type Platform, type PlatformRequestOptions } from '../src/index.js'

const platform: Platform = uni

// Were the typings not found, `uni` would be `any` and fit anything: it must not be.
type IsAny<T> = 0 extends 1 & T ? true : false
export const typed: IsAny<typeof uni.request> = false
// The options the kit passes to request are options it takes.
export const options: UniNamespace.RequestOptions = {} as PlatformRequestOptions

export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx-app',
  platform,
})
