// node-redis (the `redis` package, with @redis/bloom) against a server at
// host:port (argv[2]), as a node-redis user writes it: a default client,
// then create, fill, dump and reload a filter. Prints "ok" when every
// check passes; server/clients_node_test.go runs it.
import { createClient, commandOptions } from 'redis';
import assert from 'node:assert/strict';

const client = createClient({ url: `redis://${process.argv[2]}` });
client.on('error', (err) => { console.error('client error:', err); process.exit(1); });
await client.connect();

assert.equal(await client.ping(), 'PONG');
assert.equal(await client.bf.reserve('src', 0.001, 1000), 'OK');
await assert.rejects(client.bf.reserve('src', 0.001, 1000), /item exists/);
assert.equal(await client.bf.add('src', 'a'), true);
assert.equal(await client.bf.add('src', 'a'), false);
assert.deepEqual(await client.bf.mAdd('src', ['b', 'c', 'a']), [true, true, false]);
assert.equal(await client.bf.exists('src', 'a'), true);
assert.deepEqual(await client.bf.mExists('src', ['a', 'b', 'zzz']), [true, true, false]);
assert.deepEqual(await client.bf.insert('ins', ['x', 'y'], { CAPACITY: 50, ERROR: 0.01, EXPANSION: 4 }), [true, true]);
assert.deepEqual(await client.bf.insert('ins', ['z'], { NOCREATE: true }), [true]);
await assert.rejects(client.bf.insert('none', ['z'], { NOCREATE: true }), /not found/);
const info = await client.bf.info('src');
assert.equal(info.capacity, 1000);
assert.equal(info.numberOfFilters, 1);
assert.equal(info.numberOfInsertedItems, 3);
assert.equal(info.expansionRate, 2);
assert.equal(await client.bf.card('src'), 3);

// A dump round trip, its chunks as bytes (binary data must not pass
// through a string).
const asBytes = commandOptions({ returnBuffers: true });
for (let it = 0; ;) {
  const { iterator, chunk } = await client.bf.scanDump(asBytes, 'src', it);
  if (iterator === 0) break;
  assert.equal(await client.bf.loadChunk('dst', iterator, chunk), 'OK');
  it = iterator;
}
assert.deepEqual(await client.bf.mExists('dst', ['a', 'b', 'c']), [true, true, true]);
assert.equal((await client.bf.info('dst')).numberOfInsertedItems, 3);

const [added, found] = await client.multi().bf.add('tx', 'a').bf.exists('tx', 'a').exec();
assert.deepEqual([added, found], [true, true]);

await client.quit();
console.log('ok');
