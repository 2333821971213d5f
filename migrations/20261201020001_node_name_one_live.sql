-- One live credential per node name (issue 10): joining under a name that has one is
-- refused (an admin re-keys a node explicitly), and two joins racing for a new name cannot
-- both win.
UPDATE node_credentials SET revoked_at = now()
WHERE revoked_at IS NULL
  AND id NOT IN (SELECT max(id) FROM node_credentials WHERE revoked_at IS NULL GROUP BY node_name);
CREATE UNIQUE INDEX node_credentials_one_live ON node_credentials (node_name)
    WHERE revoked_at IS NULL;
