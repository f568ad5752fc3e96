--[[
  Reads a lease with its remaining time and the server clock, consistently.

  KEYS[1] lease key  forgesync:lease:{<key>}

  Returns {nowMs, pttl, value}, or nil when nobody holds the key.
]]
local current = redis.call('GET', KEYS[1])
if not current then
  return nil
end
local time = redis.call('TIME')
return {time[1] * 1000 + math.floor(time[2] / 1000), redis.call('PTTL', KEYS[1]), current}
