--[[
  Compare-and-extend: pushes the expiry out if the token still holds the lease.
  The value (fence, owner, acquiredAt) stays as it is.

  KEYS[1] lease key  forgesync:lease:{<key>}
  ARGV[1] token
  ARGV[2] ttl in milliseconds

  Returns 1 when extended, 0 when the key is absent or held by another token.
]]
local current = redis.call('GET', KEYS[1])
local n = #ARGV[1]
-- The value starts with "token\n"; comparing bytes avoids building "token\n" as a new string.
if current and string.sub(current, 1, n) == ARGV[1] and string.byte(current, n + 1) == 10 then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
