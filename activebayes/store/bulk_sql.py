"""Fast bulk reads and writes below the ORM, for pools of a million items: chunked Core
executemany (COPY on PostgreSQL) for inserts, DBAPI tuples for plain selects, and whole columns
read as arrays (`column_arrays`: each column joined into one string by the database and parsed
by numpy, no Python object per row). Each runs on the session's own connection, so inside its
transaction."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Text, and_, cast, func, insert, literal, literal_column, null, select
from sqlalchemy.orm import Session

from activebayes.errors import StoreError

CHUNK = 10_000  # rows per executemany batch
KEY_CHUNK = 900  # keys per IN (...) list (SQLite allows 32766 variables, PG 65535)
SPAN = 1 << 21  # ids per aggregated read of `column_arrays` (strings far below the 1 GB both databases allow)
TEXT_SEPARATOR = "\x1f"  # joins a text column's values (the ASCII unit separator)


def bulk_insert(session: Session, table: Any, values: dict[str, Any], n: int) -> None:
    """Insert `n` rows into `table`; `values` maps each column to a list of n values or to one
    scalar shared by every row (at least one column a list).

    The Core `insert(table)` is compiled once for the session's dialect and run as one DBAPI
    executemany per chunk of `CHUNK` rows, skipping SQLAlchemy's per-row parameter processing
    (which costs more than SQLite's own insert). A scalar shared by every row is written into the
    statement as a literal (its column type's literal), so each row binds only the values that
    vary. Only plain int/str/bool/float/None values.
    """
    conn = session.connection()
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        _copy_rows(conn, table, values, n)
        return
    varying = [name for name, v in values.items() if isinstance(v, list)]
    shared = {name: literal_column(table.c[name].type.literal_processor(conn.dialect)(v)) if v is not None else null()
              for name, v in values.items() if not isinstance(v, list)}  # fmt: skip
    compiled = insert(table).values(shared).compile(dialect=conn.dialect, column_keys=varying)
    sql = str(compiled)
    order = list(compiled.positiontup) if compiled.positional else varying
    for start in range(0, n, CHUNK):
        cols = [values[name][start : min(n, start + CHUNK)] for name in order]
        if compiled.positional:
            conn.exec_driver_sql(sql, list(zip(*cols)))
        else:
            conn.exec_driver_sql(sql, [dict(zip(order, r)) for r in zip(*cols)])


def analyze(session: Session, *tables: Any) -> None:
    """PostgreSQL: refresh the planner's statistics of `tables` (ANALYZE, inside the session's
    transaction) after a bulk insert. Until autovacuum gets to them the planner takes a freshly
    filled table for nearly empty, and joins the 20,000 test labels of a 200,000-row import
    with a nested loop: minutes for the round's and export's label reads instead of 0.2 s.
    Nothing on SQLite, whose plans here follow the indexes."""
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        for table in tables:
            conn.exec_driver_sql(f"ANALYZE {conn.dialect.identifier_preparer.format_table(table)}")


def _copy_rows(conn: Any, table: Any, values: dict[str, Any], n: int) -> None:
    """PostgreSQL + psycopg 3: the same rows through COPY ... FROM STDIN (about 3x faster than a
    pipelined executemany), on the session's connection, so inside its transaction."""
    names = list(values)
    prep = conn.dialect.identifier_preparer
    columns = ", ".join(prep.quote(name) for name in names)
    cols = [values[name] if isinstance(values[name], list) else itertools.repeat(values[name], n) for name in names]
    import psycopg

    cursor = conn.connection.driver_connection.cursor()
    try:
        with cursor.copy(f"COPY {prep.format_table(table)} ({columns}) FROM STDIN") as copy:
            for row in zip(*cols):
                copy.write_row(row)
    except psycopg.IntegrityError as exc:
        raise StoreError(f"database refused a duplicate or dangling reference: {exc}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"database error: {exc}") from exc
    finally:
        cursor.close()


def core_rows(session: Session, stmt: Any) -> list[tuple]:
    """All rows of a select of plain int/str columns, as DBAPI tuples.

    The statement is compiled by SQLAlchemy and run on the session's own DBAPI connection (so in
    its transaction); skipping SQLAlchemy's Row objects makes reading a 1M-item pool ~3x faster.
    Only for statements without expanding (IN-list) parameters or type-converted columns.
    """
    conn = session.connection()
    compiled = stmt.compile(dialect=conn.dialect)
    params = compiled.params
    args = [params[name] for name in compiled.positiontup] if compiled.positional else params
    cursor = conn.connection.driver_connection.cursor()
    try:
        cursor.execute(str(compiled), args)
        return cursor.fetchall()
    finally:
        cursor.close()


def _joined(dialect: str, column: Any, separator: str) -> Any:
    """The aggregate joining `column`'s values into one string: group_concat (SQLite), string_agg (PostgreSQL)."""
    if dialect == "postgresql":
        return func.string_agg(cast(column, Text), literal(separator))
    return func.group_concat(column, literal(separator))


def column_arrays(session: Session, id_column: Any, columns: Sequence[Any], where: Any,
                  text: Any = None) -> tuple[np.ndarray, list[np.ndarray], list[str]]:  # fmt: skip
    """(ids [N] int64, one int64 array [N] per integer column of `columns`, the values of the
    text column `text` ([] without one)) of the rows matching `where`, by id ascending.

    Read in spans of `SPAN` consecutive ids (up to the table's largest id, its primary key's
    last entry). The database joins each column of a span into one string (`_joined`: every
    aggregate of one select sees the rows in the same order) and numpy parses the numbers, so a
    million rows cost no million Python tuples (fetchall's cost) and no sort in the database. A
    text column is split on `TEXT_SEPARATOR`; a span where that gives more parts than rows (a
    value holding the separator) is read again row by row.
    """
    dialect = session.get_bind().dialect.name
    joined = [_joined(dialect, c, ",") for c in (id_column, *columns)]
    if text is not None:
        joined.append(_joined(dialect, text, TEXT_SEPARATOR))
    top = session.scalar(select(func.max(id_column)))
    ids: list[np.ndarray] = []
    values: list[list[np.ndarray]] = [[] for _ in columns]
    texts: list[str] = []
    for low in range(0, int(top or 0) + 1, SPAN):
        span_where = and_(where, id_column >= low, id_column < low + SPAN)
        row = session.execute(select(*joined).where(span_where)).one()
        if row[0] is None:
            continue
        ids.append(np.fromstring(row[0], dtype=np.int64, sep=","))
        for out, part in zip(values, row[1 : 1 + len(columns)]):
            out.append(np.fromstring(part, dtype=np.int64, sep=","))
        if text is not None:
            parts = row[-1].split(TEXT_SEPARATOR)
            if len(parts) != len(ids[-1]):
                by_id = dict(core_rows(session, select(id_column, text).where(span_where)))
                parts = [by_id[i] for i in ids[-1].tolist()]
            texts.extend(parts)
    if not ids:
        empty = np.empty(0, dtype=np.int64)
        return empty, [empty.copy() for _ in columns], []
    all_ids, arrays = np.concatenate(ids), [np.concatenate(v) for v in values]
    if len(all_ids) > 1 and not bool((all_ids[1:] > all_ids[:-1]).all()):  # the order the database read them in
        order = np.argsort(all_ids, kind="stable")
        all_ids, arrays = all_ids[order], [a[order] for a in arrays]
        texts = [texts[i] for i in order.tolist()] if text is not None else texts
    return all_ids, arrays, texts
