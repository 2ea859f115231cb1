-- One wrk script for every scenario of npm run bench. Arguments after `--` are key=value pairs:
--   method=GET|POST        path=/session              expect=200 (the only status counted as right)
--   header=authorization   the header that carries the credential (or "cookie")
--   keys=generated|file|none|code
--     generated: salt .. %09d of an index; the indices walk a full cycle of n with a stride
--                coprime to n, from a random start, so consecutive requests never repeat a key
--     file:      one credential per line of `file`, in order, wrapping round
--     code:      a fresh login code per request (salt .. thread counter) in a register body
--   draw=random            generated keys drawn at random (with repeats) instead of walked
--   salt, n, start, limit (requests before the generated keys wrap; default n), file, appid, secret
-- done() prints one line `BENCH-JSON {...}` for bench/run.ts to read.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

local opts = {}
statuses = {}
local lines = nil
local count = 0
local body_checks = 0

local function parse(args)
  for _, arg in ipairs(args) do
    local k, v = string.match(arg, "^([%w_]+)=(.*)$")
    if k then opts[k] = v end
  end
end

local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return a
end

local stride, n, start, limit

function init(args)
  parse(args)
  opts.method = opts.method or "GET"
  opts.header = opts.header or "authorization"
  opts.keys = opts.keys or "none"
  if opts.keys == "generated" then
    n = tonumber(opts.n)
    limit = tonumber(opts.limit or opts.n)
    math.randomseed(os.time() + tid)
    start = tonumber(opts.start or math.random(0, n - 1))
    stride = 7919
    while gcd(stride, n) ~= 1 do stride = stride + 2 end
    if limit < n then stride = 1 end -- a slice of keys is walked in order, each used once
  elseif opts.keys == "file" then
    lines = {}
    for line in io.lines(opts.file) do table.insert(lines, line) end
  end
  -- `null` bodies are 200s that mean "no session" (better-auth); they count as wrong answers.
  if opts.nonnull == "1" then body_checks = 1 end
end

local headers_ct = { ["content-type"] = "application/json" }

function request()
  count = count + 1
  local headers = {}
  local body = nil
  if opts.keys == "generated" then
    local i
    if opts.draw == "random" then
      i = math.random(0, n - 1)
    else
      i = (start + ((count - 1) % limit) * stride) % n
    end
    headers[opts.header] = string.format("%s%09d", opts.salt, i)
  elseif opts.keys == "file" then
    headers[opts.header] = lines[((count - 1) % #lines) + 1]
  elseif opts.keys == "code" then
    headers = headers_ct
    body = string.format('{"appId":"%s","appSecret":"%s","code":"%s%d-%d"}',
      opts.appid, opts.secret, opts.salt, tid, count)
  end
  return wrk.format(opts.method, opts.path, headers, body)
end

function response(status, headers, body)
  local key = tostring(status)
  if body_checks == 1 and status == 200 and (body == "null" or body == "") then key = "200-null" end
  statuses[key] = (statuses[key] or 0) + 1
end

function done(summary, latency, requests)
  local merged = {}
  for _, thread in ipairs(threads) do
    for k, v in pairs(thread:get("statuses")) do merged[k] = (merged[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(merged) do table.insert(parts, string.format('"%s":%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'BENCH-JSON {"requests":%d,"durationUs":%d,"statuses":{%s},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, table.concat(parts, ","),
    e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
