/**
 * Which of the query model's families tracks a tenant's real queries across graph builds? (not a
 * test: run by hand on a corpus embedded by `rag-bench --corpus DIR --embed use-lite`). Loads one
 * tenant's chunks and all its queries from DIR/embed-use-lite, then builds its own index (m 16 /
 * ef_construction 64) `builds` times and prints, per build, tie-aware recall@10 at ef_search 40 and
 * 100 of the real queries (all of the tenant's, and `held`: rag-bench's held-out set) and of each
 * family — the model's own and isotropic moves of 1-6 × the 10th-neighbour distance
 * (`iso1`..`iso6`), moves toward the tenant's mean (`centre…`), two chunks of different documents
 * blended (`blend0.5`, `blend0.7`: the first's weight) and a chunk blended with one of the 3
 * sampled chunks nearest to it beyond its 10th neighbour (`blendNear`) — with each set's median
 * cosine distance to its nearest chunk first. A tenant too large to read whole is answered by the
 * server's exact scan.
 *
 *   npx tsx test/store/tuning/real-query-study.ts DIR large-b 10
 */
import { readFileSync } from 'node:fs'
import { sql } from 'kysely'
import { PgVectorStore, provision } from '../../../src/index.js'
import {
  exactAnswers,
  exactAnswersInMemory,
  readTenantVectors,
  exactInMemory,
  searchRecall,
  seededRandom,
  modelQueries,
  DEFAULT_RECALL_EPSILON,
} from '../../../src/bench-kit.js'
const [corpus, tenant = 'large-b', buildsArg = '10'] = process.argv.slice(2)
if (!corpus) throw new Error('usage: real-query-study.ts DIR [tenant] [builds]')
const dir = `${corpus}/embed-use-lite`
const builds = Number(buildsArg)
const lines = readFileSync(`${dir}/chunks.jsonl`, 'utf8').trim().split('\n')
const f32 = new Float32Array(readFileSync(`${dir}/embeddings.f32`).buffer.slice(0))
const dim = 512
const rows: any[] = []
lines.forEach((l, i) => {
  const c = JSON.parse(l)
  if (c.tenant === tenant)
    rows.push({
      tenantId: 't',
      documentId: c.document,
      chunkIndex: c.chunk,
      content: 'x',
      embedding: Array.from(f32.subarray(i * dim, (i + 1) * dim)),
    })
})
const given = readFileSync(`${dir}/queries.jsonl`, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l))
  .filter((q) => q.tenant === tenant)
const real = given.map((q) => q.embedding as number[])
// rag-bench's held-out set: the first 200 of the eval split.
const held = given
  .filter((q) => q.split === 'eval')
  .slice(0, 200)
  .map((q) => q.embedding as number[])
const server = await provision({ provider: 'local' })
try {
  const store = await PgVectorStore.open(server.db, { table: 'study', dimensions: dim, querySample: false })
  await store.bulkIngest(rows)
  const handle = store.forTenant('t')
  const tv = await readTenantVectors(server.db, store.config, 't', 'pgscale')
  const unit = (x: number[]) => {
    const n = Math.hypot(...x) || 1
    return x.map((v) => v / n)
  }
  // the model's own 200 + extra families at other scales around the same kind of anchors
  const model = await modelQueries(server.db, store.config, handle, 200, 'pgscale')
  const fam: Record<string, number[][]> = {}
  model.queries.forEach((q, i) => (fam[model.families[i]!] ??= []).push(q))
  const r = seededRandom('study')
  const anchors = Array.from({ length: 50 }, () => r.int(tv.vectors.length))
  const d = model.kthDistance
  for (const s of [1, 2, 3, 4, 6]) {
    fam[`iso${s}`] = anchors.map((a) => {
      const x = unit(tv.vectors[a]!)
      const dir = unit(Array.from({ length: dim }, () => r.gaussian()))
      return unit(x.map((v, i) => v + s * d * dir[i]!))
    })
  }
  // queries toward the tenant's mean direction (off the data toward the centre) and real-like: anchors mixed with the global mean
  const mean = unit(
    tv.vectors.reduce((acc, v) => {
      const u = unit(v)
      return acc.map((x, i) => x + u[i]!)
    }, new Array(dim).fill(0)),
  )
  for (const t of [0.3, 0.5, 0.7])
    fam[`centre${t}`] = anchors.map((a) => unit(unit(tv.vectors[a]!).map((v, i) => (1 - t) * v + t * mean[i]!)))
  // two chunks of different documents blended (w of the first): a query whose neighbours lie in two places
  for (const w of [0.5, 0.7]) {
    fam[`blend${w}`] = anchors.map((a) => {
      let b = r.int(tv.vectors.length)
      while (tv.keys[b]!.documentId === tv.keys[a]!.documentId) b = r.int(tv.vectors.length)
      const [x, y] = [unit(tv.vectors[a]!), unit(tv.vectors[b]!)]
      return unit(x.map((v, i) => w * v + (1 - w) * y[i]!))
    })
  }
  // blended with a near anchor: one of the 3 anchors nearest to it (of the 50) beyond its 10th neighbour
  {
    const cos = (a: number[], b: number[]) => 1 - a.reduce((acc, v, i) => acc + v * b[i]!, 0)
    const units = anchors.map((a) => unit(tv.vectors[a]!))
    const kth: number[] = []
    for (const u of units) kth.push((await handle.exactSearch(u, { k: 11 })).at(-1)!.distance)
    fam['blendNear'] = units.map((u, i) => {
      const others = units
        .map((v, j) => ({ j, d: cos(u, v) }))
        .filter((o) => o.j !== i && o.d > kth[i]!)
        .sort((a, b) => a.d - b.d)
        .slice(0, 3)
      const v = units[others[r.int(others.length)]!.j]!
      return unit(u.map((x, k) => (x + v[k]!) / 2))
    })
  }
  // nearest-chunk distance of each set
  // A tenant too large to read whole (more than IN_MEMORY_NUMBERS components) is answered by the server.
  const nearest = async (q: number[]) =>
    tv.complete ? exactInMemory(tv, q, 1, 'cosine')[0]!.distance : (await handle.exactSearch(q, { k: 1 }))[0]!.distance
  const nearMedian: Record<string, string> = {}
  const near = (k: string) => nearMedian[k]!
  for (const [k, qs] of Object.entries({ real, held, ...fam })) {
    const ds: number[] = []
    for (const q of qs) ds.push(await nearest(q))
    ds.sort((a, b) => a - b)
    nearMedian[k] = ds[Math.floor(ds.length / 2)]!.toFixed(3)
  }
  console.log(
    'kth',
    d.toFixed(3),
    'nearest-chunk median: real',
    near('real'),
    Object.keys(fam)
      .map((k) => `${k} ${near(k)}`)
      .join(' '),
  )
  const sets: Record<string, number[][]> = { real, held, ...fam }
  const truth: Record<string, any> = {}
  for (const [k, qs] of Object.entries(sets))
    truth[k] = (tv.complete ? await exactAnswersInMemory(handle, store.config, tv, qs, 10) : await exactAnswers(handle, qs, 10)).truth
  for (let b = 0; b < builds; b++) {
    await store.optimize({ ownIndexAbove: 1000, targetRecall: null })
    const line: string[] = []
    for (const ef of [40, 100]) {
      for (const [k, qs] of Object.entries(sets)) {
        const m = await searchRecall(handle, qs, truth[k], 10, DEFAULT_RECALL_EPSILON, {
          efSearch: ef,
          iterativeScan: 'relaxed',
          exactFallback: false,
        })
        line.push(`${k}@${ef} ${m.recall.toFixed(3)}`)
      }
    }
    console.log(`build ${b}: ${line.join(' | ')}`)
    // drop the tenant index so the next optimize builds a fresh graph
    const idx = await store.createTenantIndex('t')
    await sql.raw(`drop index "${idx.index}"`).execute(server.db)
  }
} finally {
  await server.stop()
}
