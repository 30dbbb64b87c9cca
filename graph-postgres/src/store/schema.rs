//! LangGraph's Postgres store tables, their migrations tables, and the choice
//! between pgvector and the fallback for the vectors.

use super::VectorSearch;
use crate::PgError;
use tokio_postgres::Client;

/// Advisory lock (with `schema::LOCK_CLASS_MIGRATION`) of the store's migrations.
const LOCK_STORE: i32 = 2;

/// Migration `v` of `store` is `STORE_MIGRATIONS[v]`, as in LangGraph's
/// `PostgresStore` (`store_migrations`). LangGraph builds the prefix index
/// `CONCURRENTLY`, which cannot run in the migration's transaction; on a table
/// being created, a plain build is the same. `ttl_minutes` is a float here
/// (LangGraph: `INT`), so that TTLs shorter than a minute keep their length;
/// LangGraph's own statements read and write it the same way.
const STORE_MIGRATIONS: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS store (
        prefix text NOT NULL,
        key text NOT NULL,
        value jsonb NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (prefix, key)
    )",
    "CREATE INDEX IF NOT EXISTS store_prefix_idx ON store USING btree (prefix text_pattern_ops)",
    "ALTER TABLE store
        ADD COLUMN IF NOT EXISTS expires_at TIMESTAMP WITH TIME ZONE,
        ADD COLUMN IF NOT EXISTS ttl_minutes double precision",
    "CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at)
        WHERE expires_at IS NOT NULL",
];

/// The vector table with pgvector, LangGraph's `vector_migrations` 0 to 2:
/// the extension, `store_vectors` with a `vector(dims)` column, and its HNSW
/// index for cosine distance (LangGraph's default index).
fn pgvector_migrations(dims: usize) -> [String; 3] {
    [
        "CREATE EXTENSION IF NOT EXISTS vector".to_owned(),
        format!(
            "CREATE TABLE IF NOT EXISTS store_vectors (
                prefix text NOT NULL,
                key text NOT NULL,
                field_name text NOT NULL,
                embedding vector({dims}),
                created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
                PRIMARY KEY (prefix, key, field_name),
                FOREIGN KEY (prefix, key) REFERENCES store(prefix, key) ON DELETE CASCADE
            )"
        ),
        "CREATE INDEX IF NOT EXISTS store_vectors_embedding_idx ON store_vectors
            USING hnsw (embedding vector_cosine_ops)"
            .to_owned(),
    ]
}

/// The vector table without pgvector: the same table, the vectors as `real[]`.
/// Not versioned in `vector_migrations` (it is not LangGraph's layout).
const FALLBACK_VECTORS: &str = "CREATE TABLE IF NOT EXISTS store_vectors (
        prefix text NOT NULL,
        key text NOT NULL,
        field_name text NOT NULL,
        embedding real[],
        created_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP WITH TIME ZONE DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (prefix, key, field_name),
        FOREIGN KEY (prefix, key) REFERENCES store(prefix, key) ON DELETE CASCADE
    )";

/// Creates or migrates the store tables (and, with `dims`, the vector table).
/// Returns how vectors are searched.
pub(super) async fn prepare(
    client: &mut Client,
    dims: Option<usize>,
) -> Result<VectorSearch, PgError> {
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query("cannot start the store migration"))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&crate::schema::LOCK_CLASS_MIGRATION, &LOCK_STORE],
    )
    .await
    .map_err(PgError::query("cannot take the store migration lock"))?;
    let store_version = version(&tx, "store_migrations").await?;
    if store_version >= STORE_MIGRATIONS.len() as i64 {
        return Err(PgError::StoreSchemaTooNew {
            table: "store_migrations",
            found: store_version,
            supported: STORE_MIGRATIONS.len() as i64 - 1,
        });
    }
    let first = usize::try_from(store_version + 1).unwrap_or(0);
    for (v, sql) in STORE_MIGRATIONS.iter().enumerate().skip(first) {
        apply(&tx, "store_migrations", v, sql).await?;
    }
    // A table LangGraph created has an INT ttl_minutes.
    tx.batch_execute(
        "DO $$ BEGIN
            IF (SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema()
                AND table_name = 'store' AND column_name = 'ttl_minutes') = 'integer' THEN
                ALTER TABLE store ALTER COLUMN ttl_minutes TYPE double precision;
            END IF;
        END $$",
    )
    .await
    .map_err(PgError::query("cannot make store.ttl_minutes a float"))?;
    let existing: Option<String> = tx
        .query_opt(
            "SELECT udt_name::text FROM information_schema.columns WHERE table_schema = current_schema()
             AND table_name = 'store_vectors' AND column_name = 'embedding'",
            &[],
        )
        .await
        .map_err(PgError::query("cannot inspect store_vectors"))?
        .map(|row| row.get(0));
    let mode = match (existing.as_deref(), dims) {
        (Some("vector"), _) => VectorSearch::Pgvector,
        (Some(_), _) => VectorSearch::Fallback,
        (None, None) => VectorSearch::NoIndex,
        (None, Some(dims)) => {
            let available = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
                    &[],
                )
                .await
                .map_err(PgError::query("cannot look for the pgvector extension"))?
                .get::<_, bool>(0);
            let installed_elsewhere = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')
                        AND to_regtype('vector') IS NULL",
                    &[],
                )
                .await
                .map_err(PgError::query("cannot look for the pgvector extension"))?
                .get::<_, bool>(0);
            if installed_elsewhere {
                return Err(PgError::PgvectorNotOnSearchPath);
            }
            if available {
                let version = version(&tx, "vector_migrations").await?;
                let first = usize::try_from(version + 1).unwrap_or(0);
                for (v, sql) in pgvector_migrations(dims).iter().enumerate().skip(first) {
                    apply(&tx, "vector_migrations", v, sql).await?;
                }
                VectorSearch::Pgvector
            } else {
                tx.batch_execute(FALLBACK_VECTORS)
                    .await
                    .map_err(PgError::query("cannot create table store_vectors"))?;
                VectorSearch::Fallback
            }
        }
    };
    tx.commit()
        .await
        .map_err(PgError::query("cannot commit the store migration"))?;
    Ok(mode)
}

/// The highest version in `table` (created if missing), -1 when empty.
async fn version(tx: &tokio_postgres::Transaction<'_>, table: &str) -> Result<i64, PgError> {
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (v INTEGER PRIMARY KEY)"
    ))
    .await
    .map_err(PgError::query(format!("cannot create table {table}")))?;
    let row = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(v), -1)::int8 FROM {table}"),
            &[],
        )
        .await
        .map_err(PgError::query(format!("cannot read table {table}")))?;
    Ok(row.get(0))
}

async fn apply(
    tx: &tokio_postgres::Transaction<'_>,
    table: &str,
    v: usize,
    sql: &str,
) -> Result<(), PgError> {
    let v = v as i32;
    tx.batch_execute(sql)
        .await
        .map_err(PgError::query(format!("{table}: migration {v} failed")))?;
    tx.execute(
        &format!("INSERT INTO {table} (v) VALUES ($1) ON CONFLICT DO NOTHING"),
        &[&v],
    )
    .await
    .map_err(PgError::query(format!("cannot record {table} {v}")))?;
    Ok(())
}
