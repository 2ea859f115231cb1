#!/usr/bin/env node
// The `campusgate` command. It runs the build in dist/ (made by `npm ci` or `npm run build`).
import { main } from '../dist/main.js'

await main(process.argv.slice(2), process.env, 'help')
