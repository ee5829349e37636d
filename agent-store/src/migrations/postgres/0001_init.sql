-- loopwright-store, schema 1 (PostgreSQL). Never edit a released migration: add one.
-- JSON columns are `json` (kept as written, so \u0000 in a message is fine,
-- which `jsonb` refuses); cast to jsonb to query them.

-- One row per appended turn: the turn's messages as a JSON array. The
-- primary key makes a second writer of the same version fail.
CREATE TABLE IF NOT EXISTS loopwright_conversation_turns (
    conversation_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    messages JSON NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, version)
);

CREATE TABLE IF NOT EXISTS loopwright_runs (
    id TEXT NOT NULL PRIMARY KEY,
    agent TEXT NOT NULL,
    session TEXT,
    status TEXT NOT NULL,
    state JSON,
    result JSON,
    error JSON,
    owner TEXT,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS loopwright_runs_status ON loopwright_runs (status, updated_at);
CREATE INDEX IF NOT EXISTS loopwright_runs_updated ON loopwright_runs (updated_at);

CREATE TABLE IF NOT EXISTS loopwright_events (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event JSON NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
