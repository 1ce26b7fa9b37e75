// node-postgres (pg) and snowflake ids, which are above 2^53, the largest
// integer a JavaScript number holds exactly.  Shows that a bigint arrives as
// a string equal to the server's id::text, that types.setTypeParser(20,
// BigInt) gives exact BigInts instead, that JSON.stringify refuses a BigInt
// and how to send ids as strings in JSON, and INSERT ... RETURNING id through
// a parameterised query.
//
// Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
// PGDATABASE) to a database with CREATE EXTENSION snowflake:
//   npm ci && node pg.js
'use strict';

const assert = require('node:assert/strict');
const pg = require('pg');

async function main(client) {
  await client.query('DROP TABLE IF EXISTS orders');
  await client.query(`CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer text NOT NULL
  )`);

  // readme:node-insert
  const { rows } = await client.query(
    'INSERT INTO orders (customer) VALUES ($1) RETURNING id', ['ada']);
  const id = rows[0].id; // a string, such as '253918188092289024'
  // end

  assert.equal(typeof id, 'string', `a bigint arrived as ${typeof id}, not as a string`);
  const server = await client.query(
    'SELECT id::text AS text FROM orders WHERE id = $1', [id]);
  assert.equal(server.rows.length, 1, `the id ${id} sent back as a parameter found no row`);
  assert.equal(id, server.rows[0].text, "the string differs from the server's id::text");
  assert.ok(BigInt(id) > 2n ** 53n, `${id} is not above 2^53`);
  assert.ok(!Number.isSafeInteger(Number(id)), `${id} fits a number exactly`);

  // Many ids, each exactly the server's text.
  const many = await client.query(`
    INSERT INTO orders (customer) SELECT 'customer ' || g FROM generate_series(1, 1000) g
    RETURNING id, id::text AS text`);
  for (const row of many.rows) {
    assert.equal(row.id, row.text, "a string differs from the server's id::text");
  }

  // JSON built by the server: an id cast to text stays exact.
  const { rows: [doc] } = await client.query(
    "SELECT json_build_object('id', id::text) AS doc FROM orders WHERE id = $1", [id]);
  assert.equal(doc.doc.id, id, "json_build_object('id', id::text) changed the id");

  // readme:node-bigint
  pg.types.setTypeParser(20, BigInt); // 20: the type oid of bigint (int8)
  const { rows: [order] } = await client.query(
    'SELECT id, customer FROM orders WHERE id = $1', [BigInt(id)]);
  // order.id is a BigInt, exact: 253918188092289024n
  // end

  assert.equal(typeof order.id, 'bigint', `with the parser, an id arrived as ${typeof order.id}`);
  assert.equal(order.id, BigInt(id), 'the BigInt differs from the string read before');
  const all = await client.query('SELECT id, id::text AS text FROM orders ORDER BY id');
  assert.equal(all.rows.length, 1001);
  for (const row of all.rows) {
    assert.equal(row.id, BigInt(row.text), "a BigInt differs from the server's id::text");
  }

  assert.throws(() => JSON.stringify(order), TypeError,
    'JSON.stringify of a BigInt was expected to throw');

  // readme:node-json
  const json = JSON.stringify(order, (key, value) =>
    typeof value === 'bigint' ? value.toString() : value);
  // '{"id":"253918188092289024","customer":"ada"}'
  const received = BigInt(JSON.parse(json).id); // on the other side
  // end

  assert.equal(json, `{"id":"${id}","customer":"ada"}`);
  assert.equal(received, order.id, 'the id did not survive a round trip through JSON');
}

const client = new pg.Client();
client.connect()
  .then(() => main(client))
  .then(() => console.log('node-postgres: ok'))
  .catch((err) => {
    console.error(`node-postgres: ${err.stack}`);
    process.exitCode = 1;
  })
  .finally(() => client.end());
