--[[
  Acquires a lease if nobody holds it, and reports the holder if someone does.

  KEYS[1] lease key  forgesync:lease:{<key>}
  KEYS[2] fence key  forgesync:fence:{<key>}   (never deleted, so fences only grow)
  ARGV[1] token
  ARGV[2] ttl in milliseconds
  ARGV[3] the rest of the value, joined by the caller: \n acquiredAtMs \n pid \n owner name \n key \n host
          (acquiredAt is the caller's clock when it sent the request; the key is stored so that
          list() need not parse it back out of the Redis key name)
  ARGV[4] "1" when the caller wants the holder on failure, "0" when a bare refusal will do

  Stored value: token \n fence \n acquiredAtMs \n pid \n name \n key \n host
  (host last: it is the only field nobody validated, so the reader keeps the rest of the string)

  Returns
    fence             acquired (never 0): an integer below 10^14, from there on the counter's
                      decimal string (exact at any size); when ARGV[1] already holds the key,
                      which is what a resent acquire (reply lost on a dropped connection) sees,
                      the stored fence as a decimal string
    0                 someone else holds it (ARGV[4] = "0": tryAcquire needs no more)
    {nowMs, pttl, value}   someone else holds it (ARGV[4] = "1"), by the server's clock

  Every step here runs on each acquire, so it avoids what costs most inside a script: no TIME
  (the expiry is PX, a duration on the server's clock) and no number formatting calls. Lua's own
  conversion writes the fence exactly below 10^14 only (it uses %.14g: 1.8e+15 above), so a
  larger fence, which a raiseFence above another backend's fences can lead to, is read back
  from the counter as text with one more GET.
]]
local current = redis.call('GET', KEYS[1])
if not current then
  local fence = redis.call('INCR', KEYS[2])
  if fence >= 1e14 then
    fence = redis.call('GET', KEYS[2])
  end
  redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. fence .. ARGV[3], 'PX', ARGV[2])
  return fence
end

local n = #ARGV[1]
if string.sub(current, 1, n) == ARGV[1] and string.byte(current, n + 1) == 10 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  -- As stored: text, exact whatever its size.
  return string.match(current, '^[^\n]*\n([^\n]*)')
end

if ARGV[4] == '0' then
  return 0
end
local time = redis.call('TIME')
return {time[1] * 1000 + math.floor(time[2] / 1000), redis.call('PTTL', KEYS[1]), current}
