--[[
  Acquires a lease if nobody holds it, and reports the holder if someone does.

  KEYS[1] lease key  forgesync:lease:{<key>}
  KEYS[2] fence key  forgesync:fence:{<key>}   (never deleted, so fences only grow)
  ARGV[1] token
  ARGV[2] ttl in milliseconds
  ARGV[3] the rest of the value, joined by the caller: \n pid \n owner name \n key \n host
          (one argument rather than four; the key is stored so that list() need not parse
          it back out of the Redis key name)
  ARGV[4] "1" when the caller wants the holder on failure, "0" when a bare refusal will do

  Stored value: token \n fence \n acquiredAtMs \n pid \n name \n key \n host
  (host last: it is the only field nobody validated, so the reader keeps the rest of the string)

  Returns
    "fence\nacquiredAtMs\nnowMs"   acquired; also when ARGV[1] already holds the key, which is
                                   what a resent acquire (reply lost on a dropped connection) sees
    {nowMs, pttl, value}           someone else holds it (ARGV[4] = "1")
    0                              someone else holds it (ARGV[4] = "0": tryAcquire needs no more)
  (A string rather than an array on the success path: one bulk reply is cheaper to build and parse.)
]]
local current = redis.call('GET', KEYS[1])
local n = #ARGV[1]
local ours = current and string.sub(current, 1, n) == ARGV[1] and string.byte(current, n + 1) == 10
if current and not ours and ARGV[4] == '0' then
  return 0
end

-- Milliseconds as a string, from TIME's seconds and (unpadded) microseconds, by string operations
-- alone: formatting a number as a string (string.format, tostring) costs almost as much as TIME.
local time = redis.call('TIME')
local now = time[1] .. string.sub('00000' .. time[2], -6, -4)

if not current then
  local fence = string.format('%d', redis.call('INCR', KEYS[2]))
  redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. fence .. '\n' .. now .. ARGV[3], 'PX', ARGV[2])
  return fence .. '\n' .. now .. '\n' .. now
end

if ours then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local fence, acquiredAt = string.match(current, '^[^\n]*\n([^\n]*)\n([^\n]*)')
  return fence .. '\n' .. acquiredAt .. '\n' .. now
end

return {tonumber(now), redis.call('PTTL', KEYS[1]), current}
