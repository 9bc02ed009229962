-- rotate.lua - wrk script of `make bench`: POSTs AdmissionReview bodies in rotation.
--
-- Env: BENCH_BODIES  file with one request body (compact JSON) per line (required)
--      BENCH_PATH    request path (default /pods/mutate?timeout=10s, as kube-apiserver)
--      BENCH_LIMIT   when > 0, each thread stops after this many responses and then
--                    creates the file BENCH_DONE<thread id>: a fixed-count run. wrk itself
--                    still waits for --duration, so the caller gives a long one and sends
--                    SIGINT (wrk's "stop and report") once every thread's file exists.
-- Each thread pre-formats every request once and starts at its own offset, so the
-- threads do not send the same pod at the same time. Every answer is checked for
-- "allowed":true (a webhook that is up but denies is not a result): the count of
-- answers without it is reported as "denied". done() prints one line
--   BENCH_RESULT {json}
-- with the counts and the latency percentiles (microseconds) for bench/bench.py.

local bodies_file = os.getenv("BENCH_BODIES")
local path = os.getenv("BENCH_PATH") or "/pods/mutate?timeout=10s"
local limit = tonumber(os.getenv("BENCH_LIMIT") or "0") or 0
local done_prefix = os.getenv("BENCH_DONE") or ""

local next_id = 1
local threads = {}
function setup(thread)
    thread:set("id", next_id)
    next_id = next_id + 1
    threads[#threads + 1] = thread
end

local reqs = {}
local n = 0
local i = 0
answered = 0
denied = 0

function init(args)
    local f = assert(io.open(bodies_file, "r"))
    local headers = {["Content-Type"] = "application/json", ["Accept"] = "application/json"}
    for line in f:lines() do
        if #line > 0 then
            reqs[#reqs + 1] = wrk.format("POST", path, headers, line)
        end
    end
    f:close()
    n = #reqs
    assert(n > 0, "no bodies in " .. tostring(bodies_file))
    i = (((id or 1) - 1) * 7) % n
end

function request()
    i = i % n + 1
    return reqs[i]
end

function response(status, headers, body)
    answered = answered + 1
    if not (body and string.find(body, '"allowed":true', 1, true)) then
        denied = denied + 1
    end
    if limit > 0 and answered == limit then
        if done_prefix ~= "" then
            local f = io.open(done_prefix .. tostring(id), "w")
            if f then
                f:close()
            end
        end
        wrk.thread:stop()
    end
end

function done(summary, latency, requests)
    local e = summary.errors
    local nden = 0
    for _, t in ipairs(threads) do
        nden = nden + (t:get("denied") or 0)
    end
    io.write(string.format(
        'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
        '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,' ..
        '"timeouts":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,' ..
        '"max_us":%d,"mean_us":%.1f,"denied":%d}\n',
        summary.requests, summary.duration, summary.bytes,
        e.connect, e.read, e.write, e.status, e.timeout,
        latency:percentile(50), latency:percentile(90), latency:percentile(99),
        latency:percentile(99.9), latency.max, latency.mean, nden))
end
