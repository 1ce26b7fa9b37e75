"""SQLAlchemy and snowflake ids: models whose BigInteger primary key has
server_default=text("snowflake_nextval()").  The ORM learns each id at
session.flush() (INSERT ... RETURNING), a bulk insert of many objects learns
all their ids, and a relationship fills its foreign key from the parent's id.

Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
PGDATABASE) to a database with CREATE EXTENSION snowflake, through psycopg2
(SQLAlchemy 1.4; 2.0 also takes "postgresql+psycopg://" for psycopg 3):
    python3 sqlalchemy_ids.py
"""
import sys

import sqlalchemy
from sqlalchemy import (
    BigInteger, Column, ForeignKey, Text, create_engine, event, func, select, text)
from sqlalchemy.orm import Session, declarative_base, relationship


def check(condition, message):
    if not condition:
        sys.exit(f"sqlalchemy: {message}")


Base = declarative_base()


# readme:sqlalchemy-model
class Order(Base):
    __tablename__ = "orders"
    id = Column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    customer = Column(Text, nullable=False)
    lines = relationship("OrderLine", back_populates="order")


class OrderLine(Base):
    __tablename__ = "order_lines"
    id = Column(BigInteger, primary_key=True, server_default=text("snowflake_nextval()"))
    order_id = Column(BigInteger, ForeignKey("orders.id"), nullable=False)
    product = Column(Text, nullable=False)
    order = relationship(Order, back_populates="lines")
# end


def main():
    engine = create_engine("postgresql+psycopg2://")
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with engine.connect() as conn:
        default = conn.execute(text(
            "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef"
            " WHERE adrelid = 'orders'::regclass")).scalar()
    check(default == "snowflake_nextval()", f"orders.id defaults to {default!r}")

    # readme:sqlalchemy-flush
    with Session(engine) as session:
        order = Order(customer="ada", lines=[OrderLine(product="tea"), OrderLine(product="cake")])
        session.add(order)
        session.flush()  # INSERT ... RETURNING id: order.id is known from here on
        order_id = order.id
        session.commit()
    # end

    check(type(order_id) is int and order_id > 2**53, f"order.id after flush is {order_id!r}")
    with Session(engine) as session:
        order = session.get(Order, order_id)
        check(order is not None, f"no order read back for id {order_id}")
        check(order.customer == "ada", "the order read back is not the one inserted")
        products = sorted(line.product for line in order.lines)
        check(products == ["cake", "tea"], f"the order's lines read back are {products}")
        for line in order.lines:
            check(line.order_id == order_id, "a line's foreign key is not its order's id")
            check(line.id > order_id, "a line's id is not above its order's, inserted before it")

    statements = []
    event.listen(engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *args: statements.append(statement))

    # readme:sqlalchemy-bulk
    with Session(engine) as session:
        orders = [Order(customer=f"customer {i}") for i in range(500)]
        session.add_all(orders)
        session.flush()  # INSERT ... RETURNING: every order has its id
        ids = [o.id for o in orders]
        session.commit()
    # end

    check(all(type(i) is int for i in ids), "an order of the bulk insert has no id after flush")
    check(ids == sorted(set(ids)) and ids[0] > order_id,
          "the bulk insert's ids are not distinct and increasing in the order of the objects")
    inserts = [s for s in statements if s.lstrip().upper().startswith("INSERT")]
    if sqlalchemy.__version__.startswith("1."):
        # 1.4 batches them (psycopg2's execute_values with RETURNING)
        check(len(inserts) < 10, f"the bulk insert of 500 orders took {len(inserts)} INSERTs")
    else:
        # 2.x batches ORM inserts only when it can match the rows returned to
        # the objects (an IDENTITY or SERIAL key, or a sentinel column): one
        # each here, as doc/clients.md says; if that changes, so must doc/clients.md
        check(len(inserts) == 500,
              f"SQLAlchemy {sqlalchemy.__version__}: the bulk insert of 500 orders took "
              f"{len(inserts)} INSERTs, not one each as doc/clients.md says")
    with Session(engine) as session:
        stored = session.scalars(
            select(Order.id).where(Order.customer.like("customer %")).order_by(Order.id)).all()
        check(stored == ids, "the ids in the table differ from those the ORM learned")
        names = session.scalars(select(Order.customer).order_by(Order.id)).all()
        check(names == ["ada"] + [f"customer {i}" for i in range(500)],
              "orders by id are not in the order they were added")
        lines = session.scalar(select(func.count()).select_from(OrderLine))
        check(lines == 2, f"{lines} order lines in the table, not 2")


main()
print("sqlalchemy: ok")
