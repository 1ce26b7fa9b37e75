// knex and snowflake ids: a table whose key defaults to snowflake_nextval(),
// declared with knex's schema builder; an insert returns the id (a string,
// as node-postgres gives bigints), and the row reads back by it.
//
// Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
// PGDATABASE) to a database with CREATE EXTENSION snowflake:
//   npm ci && node knex.js
'use strict';

const assert = require('node:assert/strict');
const knex = require('knex')({ client: 'pg', connection: {} });

async function main() {
  await knex.schema.dropTableIfExists('orders');

  // readme:knex-table
  await knex.schema.createTable('orders', (table) => {
    table.bigInteger('id').primary().defaultTo(knex.raw('snowflake_nextval()'));
    table.text('customer').notNullable();
  });
  // end

  // readme:knex-insert
  const [{ id }] = await knex('orders').insert({ customer: 'ada' }).returning('id');
  const order = await knex('orders').where({ id }).first();
  // end

  assert.equal(typeof id, 'string', `a bigint arrived as ${typeof id}, not as a string`);
  assert.ok(BigInt(id) > 2n ** 53n, `${id} is not above 2^53`);
  assert.ok(order, `no row read back for ${id}`);
  assert.equal(order.id, id);
  assert.equal(order.customer, 'ada');
  const { rows: [server] } = await knex.raw(
    'SELECT id::text AS text FROM orders WHERE id = ?', [id]);
  assert.equal(id, server.text, "the id differs from the server's id::text");

  // Several rows in one statement: ids in the order of the rows, increasing.
  const inserted = await knex('orders')
    .insert([{ customer: 'grace' }, { customer: 'edsger' }, { customer: 'barbara' }])
    .returning(['id', 'customer']);
  assert.deepEqual(inserted.map((row) => row.customer), ['grace', 'edsger', 'barbara']);
  const ids = [id, ...inserted.map((row) => row.id)].map(BigInt);
  for (let i = 1; i < ids.length; i++) {
    assert.ok(ids[i] > ids[i - 1], `ids not increasing: ${ids[i - 1]} then ${ids[i]}`);
  }
  const names = await knex('orders').orderBy('id').pluck('customer');
  assert.deepEqual(names, ['ada', 'grace', 'edsger', 'barbara'],
    'rows ordered by id are not in insertion order');
}

main()
  .then(() => console.log('knex: ok'))
  .catch((err) => {
    console.error(`knex: ${err.stack}`);
    process.exitCode = 1;
  })
  .finally(() => knex.destroy());
