// An HTTP API (node:http and node-postgres) that shows public ids, never
// snowflake ids: POST /orders returns the new order's public id, GET
// /orders/<public id> finds it again, and a string no key made (or a
// mistyped one) is a 404, like an id that matches no row.  Runs the server
// on 127.0.0.1 with an ephemeral port, calls it with fetch, and checks the
// answers.
//
// Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
// PGDATABASE) to a database with CREATE EXTENSION snowflake, as a superuser
// the first time (to create the server's public id key if it has none):
//   npm ci && node public_ids.js
'use strict';

const assert = require('node:assert/strict');
const http = require('node:http');
const pg = require('pg');

const pool = new pg.Pool({ max: 4 });

// readme:node-public-handler
async function handle(req, res) {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const match = /^\/orders\/([0-9A-Za-z]+)$/.exec(req.url);
  if (req.method === 'POST' && req.url === '/orders') {
    const { rows: [order] } = await pool.query(
      `INSERT INTO orders (customer) VALUES ($1)
       RETURNING snowflake_public_id(id) AS id, customer`, ['ada']);
    return send(201, order); // {"id":"1M3XQ7T0Z8K2B9PA","customer":"ada"}
  }
  if (req.method === 'GET' && match) {
    try {
      const { rows } = await pool.query(
        `SELECT snowflake_public_id(id) AS id, customer FROM orders
          WHERE id = snowflake_id_from_public($1)`, [match[1]]);
      return rows.length ? send(200, rows[0]) : send(404, { error: 'no such order' });
    } catch (err) {
      // 22P02: not a public id of this application (mistyped, forged)
      if (err.code === '22P02') return send(404, { error: 'no such order' });
      throw err;
    }
  }
  return send(404, { error: 'not found' });
}
// end

async function main() {
  await pool.query('DROP TABLE IF EXISTS orders');
  await pool.query(`CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer text NOT NULL
  )`);
  // Once per server (fleet: see doc/public-ids.md): a superuser's job.
  await pool.query(`SELECT snowflake_public_key_create(first => true)
                     WHERE NOT EXISTS (SELECT FROM snowflake_public_keys())`);

  const server = http.createServer((req, res) => handle(req, res).catch((err) => {
    console.error(err);
    res.writeHead(500).end();
  }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const created = await fetch(`${base}/orders`, { method: 'POST' });
    assert.equal(created.status, 201);
    const order = await created.json();
    assert.match(order.id, /^[0-9A-HJKMNP-TV-Z]{16}$/, `${order.id} is not a public id`);

    // The row behind it, and its public id made again by the server
    const { rows: [row] } = await pool.query(
      'SELECT id, snowflake_public_id(id) AS public FROM orders');
    assert.equal(row.public, order.id);

    const found = await fetch(`${base}/orders/${order.id}`);
    assert.equal(found.status, 200);
    assert.deepEqual(await found.json(), { id: order.id, customer: 'ada' });
    // lower case, as a user may type it
    assert.equal((await fetch(`${base}/orders/${order.id.toLowerCase()}`)).status, 200);

    // A mistyped public id: one character changed.  It decodes to no order
    // (the key refuses it, or, 1 time in 4096, it gives an id no row has).
    const last = order.id.slice(-1) === 'Z' ? 'Y' : 'Z';
    const wrong = await fetch(`${base}/orders/${order.id.slice(0, -1)}${last}`);
    assert.equal(wrong.status, 404);
    assert.deepEqual(await wrong.json(), { error: 'no such order' });
    // Not a public id at all: a snowflake id, a short string
    assert.equal((await fetch(`${base}/orders/${row.id}`)).status, 404);
    assert.equal((await fetch(`${base}/orders/ABC`)).status, 404);

    // Many orders: distinct public ids, each finding its own row
    const ids = [];
    for (let i = 0; i < 50; i++) {
      ids.push((await (await fetch(`${base}/orders`, { method: 'POST' })).json()).id);
    }
    assert.equal(new Set(ids).size, 50);
    for (const id of ids) {
      assert.equal((await (await fetch(`${base}/orders/${id}`)).json()).id, id);
    }
  } finally {
    server.close();
  }
}

main()
  .then(() => console.log('node-postgres public ids: ok'))
  .catch((err) => {
    console.error(`node-postgres public ids: ${err.stack}`);
    process.exitCode = 1;
  })
  .finally(() => pool.end());
