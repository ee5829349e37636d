-- loopwright-store, schema 1 (SQLite). Never edit a released migration: add one.

-- One row per appended turn: the turn's messages as a JSON array. The
-- primary key makes a second writer of the same version fail.
CREATE TABLE IF NOT EXISTS loopwright_conversation_turns (
    conversation_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    messages TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, version)
);

CREATE TABLE IF NOT EXISTS loopwright_runs (
    id TEXT NOT NULL PRIMARY KEY,
    agent TEXT NOT NULL,
    session TEXT,
    status TEXT NOT NULL,
    state TEXT,
    result TEXT,
    error TEXT,
    owner TEXT,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS loopwright_runs_status ON loopwright_runs (status, updated_at);
CREATE INDEX IF NOT EXISTS loopwright_runs_updated ON loopwright_runs (updated_at);

CREATE TABLE IF NOT EXISTS loopwright_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);
