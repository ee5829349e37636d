-- loopwright-store, schema 3 (PostgreSQL). Never edit a released migration: add one.

-- A session's runs, newest first (a chat's turn in progress, found by its
-- chat's id).
CREATE INDEX IF NOT EXISTS loopwright_runs_session ON loopwright_runs (session, created_at);
