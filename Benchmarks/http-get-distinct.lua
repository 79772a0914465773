-- wrk script for the *-distinct rows of Benchmarks/http-get.sh: GET requests spread over many records, each of wrk's
-- threads taking them in turn (its connections share the turn) from a start of its own.
-- Reads HTTP_GET_REQUESTS, a file of lines "PATH<TAB>HEADER: VALUE<TAB>HEADER: VALUE…" (the headers of that path
-- alone; wrk's -H headers go with every request).
local requests = {}
local n, i = 0, 0

-- Each thread gets a number (wrk runs setup once per thread, in the main script's state) and starts that far apart.
local threads = 0
setup = function(thread)
  thread:set("thread_number", threads)
  threads = threads + 1
end

init = function(args)
  for line in io.lines(os.getenv("HTTP_GET_REQUESTS")) do
    local fields = {}
    for field in string.gmatch(line, "[^\t]+") do fields[#fields + 1] = field end
    local headers = {}
    -- wrk.format takes the headers given instead of wrk's -H ones: both go with each request.
    for name, value in pairs(wrk.headers) do headers[name] = value end
    for k = 2, #fields do
      local name, value = string.match(fields[k], "^([^:]+):%s*(.*)$")
      headers[name] = value
    end
    n = n + 1
    requests[n] = wrk.format("GET", fields[1], headers)
  end
  i = ((thread_number or 0) * 7919) % n
end

request = function()
  i = i % n + 1
  return requests[i]
end
