#!/usr/bin/env node
// kuuid-bridge.js: lets the Python tests ask the real kuuid package (1.0.3, pinned in
// package.json) for answers, so couchids is checked against the reference implementation.
// Install first: scripts/bootstrap (runs `npm ci` here). Every mode writes one JSON value to stdout.
//
//   node kuuid-bridge.js < request.json          cross-check mode
//     stdin:  {"timestamps": [<epoch ms int or ISO string>, ...], "random_samples": N}
//     stdout: {"cases": [{"timestamp", "prefix", "prefix_ms", "prefix_reverse",
//                         "prefix_reverse_ms", "id", "idr", "ids", "idsr", "idms", "idmsr"}, ...],
//              "rand": [N x kuuid.rand()], "ids_now": [N x kuuid.id()]}
//
//   node kuuid-bridge.js --make < calls.json      make ids, e.g. for integration tests
//     stdin:  {"calls": [{"fn": "id"|"idr"|"ids"|"idsr"|"idms"|"idmsr", "timestamp": <ms int>}, ...]}
//     stdout: ["<id>", ...]   (one id per call, in order)
//
//   node kuuid-bridge.js --bench N                time kuuid.id() over N calls after a warm-up
//     stdout: {"ns_per_id": <float>}
//
// Timestamps are passed to kuuid unchanged. Note kuuid's own quirk: a falsy timestamp
// (0, "", null) means "now", so the epoch must be given as "1970-01-01T00:00:00.000Z".
'use strict'

const fs = require('fs')
const kuuid = require('kuuid')

const ID_FUNCTIONS = ['id', 'idr', 'ids', 'idsr', 'idms', 'idmsr']

function fail (message) {
  process.stderr.write(`kuuid-bridge: ${message}\n`)
  process.exit(2)
}

function readRequest () {
  const text = fs.readFileSync(0, 'utf8')
  try {
    return JSON.parse(text)
  } catch (e) {
    fail(`stdin is not JSON: ${e.message}`)
  }
}

function crossCheck (request) {
  const timestamps = request.timestamps || []
  const samples = request.random_samples || 0
  if (!Array.isArray(timestamps)) fail('"timestamps" must be a list')
  if (!Number.isInteger(samples) || samples < 0) fail('"random_samples" must be an integer >= 0')
  const cases = timestamps.map((t) => ({
    timestamp: t,
    prefix: kuuid.prefix(t),
    prefix_ms: kuuid.prefixms(t),
    prefix_reverse: kuuid.prefixReverse(t),
    prefix_reverse_ms: kuuid.prefixReverseMs(t),
    id: kuuid.id(t),
    idr: kuuid.idr(t),
    ids: kuuid.ids(t),
    idsr: kuuid.idsr(t),
    idms: kuuid.idms(t),
    idmsr: kuuid.idmsr(t)
  }))
  const rand = []
  const idsNow = []
  for (let i = 0; i < samples; i++) {
    rand.push(kuuid.rand())
    idsNow.push(kuuid.id())
  }
  return { cases, rand, ids_now: idsNow }
}

function make (request) {
  if (!request || !Array.isArray(request.calls)) fail('expected {"calls": [...]}')
  return request.calls.map((call) => {
    if (!ID_FUNCTIONS.includes(call.fn)) {
      fail(`unknown fn ${JSON.stringify(call.fn)}; expected one of ${ID_FUNCTIONS.join(', ')}`)
    }
    return kuuid[call.fn](call.timestamp)
  })
}

function bench (n) {
  if (!Number.isInteger(n) || n < 1) fail('--bench needs a positive integer count')
  let sink = 0
  for (let i = 0; i < Math.min(n, 100000); i++) sink += kuuid.id().length
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) sink += kuuid.id().length
  const elapsed = process.hrtime.bigint() - start
  // sink keeps the calls observable, so they cannot be optimised away
  if (sink === 0) fail('kuuid.id() returned empty ids')
  return { ns_per_id: Number(elapsed) / n }
}

function main (argv) {
  let result
  if (argv[0] === '--bench') {
    result = bench(Number(argv[1]))
  } else if (argv[0] === '--make') {
    result = make(readRequest())
  } else if (argv.length === 0) {
    result = crossCheck(readRequest())
  } else {
    fail(`unknown arguments ${argv.join(' ')}; see the comment at the top of this file`)
  }
  process.stdout.write(JSON.stringify(result) + '\n')
}

main(process.argv.slice(2))
