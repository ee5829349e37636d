-- loopwright-store, schema 2 (SQLite). Never edit a released migration: add one.

-- Chains of turns (a stored response's own turn, linked to the turn it
-- continues): each turn stored once. `depth` is the chain's length up to
-- this turn, written from the previous turn's, so a walk back from a turn
-- is bounded by its own row. A released turn (deleted by its owner, or
-- expired) is kept while a turn that is not released continues from it.
CREATE TABLE IF NOT EXISTS loopwright_chain_turns (
    id TEXT NOT NULL PRIMARY KEY,
    previous TEXT REFERENCES loopwright_chain_turns (id),
    depth INTEGER NOT NULL,
    messages TEXT NOT NULL,
    released INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS loopwright_chain_turns_previous ON loopwright_chain_turns (previous);
CREATE INDEX IF NOT EXISTS loopwright_chain_turns_created ON loopwright_chain_turns (created_at);
