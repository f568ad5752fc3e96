--[[
  Compare-and-delete: releases the lease if the token still holds it.
  The fence key is left alone so the next holder gets a larger fence.

  KEYS[1] lease key  forgesync:lease:{<key>}
  ARGV[1] token

  Returns 1 when released, 0 when the key is absent or held by another token.
]]
local current = redis.call('GET', KEYS[1])
local n = #ARGV[1]
-- The value starts with "token\n"; comparing bytes avoids building "token\n" as a new string.
if current and string.sub(current, 1, n) == ARGV[1] and string.byte(current, n + 1) == 10 then
  return redis.call('DEL', KEYS[1])
end
return 0
