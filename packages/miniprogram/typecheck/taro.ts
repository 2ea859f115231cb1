// Compiled, never run: Taro's default export, as @tarojs/taro declares it, fits the kit's Platform,
// and the kit's request options are options its request takes.
import Taro from '@tarojs/taro'
import { createCampusgate, type Platform, type PlatformRequestOptions } from '../src/index.js'

const platform: Platform = Taro

// Were the typings not found, `Taro` would be `any` and fit anything: it must not be.
type IsAny<T> = 0 extends 1 & T ? true : false
export const typed: IsAny<typeof Taro.request> = false
// The options the kit passes to request are options it takes.
export const options: Taro.request.Option = {} as PlatformRequestOptions

export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx-app',
  platform,
})
