-- Every key that starts with ARGV[1]: counted, and unlinked unless ARGV[2] is "count".
local cursor, found = "0", 0
repeat
  local page = redis.call("SCAN", cursor, "MATCH", ARGV[1] .. "*", "COUNT", 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    if ARGV[2] ~= "count" then
      redis.call("UNLINK", key)
    end
    found = found + 1
  end
until cursor == "0"
return found
