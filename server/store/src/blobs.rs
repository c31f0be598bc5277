//! Blob storage over object_store: content-addressed containers.
//!
//! A container lives at `blobs/sha256/ab/cd/<hex>`, where `ab` and `cd` are
//! the first two bytes of its SHA-256, so no folder grows too large on a
//! filesystem. Blobs are written create-only: the same bytes always have the
//! same key, so a second (or concurrent) write of one blob is harmless and an
//! existing blob is never overwritten.

use std::{collections::HashSet, path::PathBuf, sync::Arc, time::Duration};

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::{
    ClientConfigKey, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey},
    local::LocalFileSystem,
    path::Path,
    prefix::PrefixStore,
};

use agentlang_core::digest::Sha256Digest;
use serde::Deserialize;

/// Where blobs live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// A folder on the local filesystem.
    File(PathBuf),
    /// A bucket of an S3-compatible service, with an optional key prefix.
    S3 { bucket: String, prefix: String },
}

impl StorageUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("file://") {
            if path.is_empty() {
                return Err("file:// needs a path".to_owned());
            }
            Ok(Self::File(PathBuf::from(path)))
        } else if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err("s3:// needs a bucket name".to_owned());
            }
            Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
            })
        } else {
            Err(format!(
                "{url:?} is not a storage URL (expected file://PATH or s3://BUCKET/PREFIX)"
            ))
        }
    }
}

/// Explicit S3 settings. Each one left `None` falls back to the standard
/// `AWS_*` variable that `AmazonS3Builder::from_env` reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Settings {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub allow_http: Option<bool>,
}

/// The prefix every blob key starts with.
const BLOB_PREFIX: &str = "blobs/sha256";

/// Bytes read and uploaded at a time by [`Blobs::put_file`]: S3's smallest
/// multipart part size, and so the memory one upload holds per part.
pub const UPLOAD_CHUNK: usize = 5 * 1024 * 1024;

/// Multipart uploads that may run at once per process. Each holds at most
/// two parts (one being read, one being sent), so this bounds the memory of
/// all uploads together (here 40 MiB) however many publishes arrive; the
/// rest wait with their bytes on disk.
const MULTIPART_UPLOADS_AT_ONCE: usize = 4;

/// A blob's bytes as they arrive from the store.
pub type BlobStream = futures_util::stream::BoxStream<'static, Result<Bytes, object_store::Error>>;

/// Bytes read from a local file per blocking read when a download streams:
/// 1 MiB goes out in 4 reads, not object_store's 128 of 8 KiB.
const FILE_CHUNK: u64 = 256 * 1024;

/// Largest blob the hot cache keeps: bigger ones stream from the store.
pub const HOT_BLOB_MAX: u64 = 2 * 1024 * 1024;

/// Blobs read whole for the hot cache at once per process; a download that
/// finds none free streams instead, so fills hold at most 16 MiB.
const HOT_FILLS_AT_ONCE: usize = 8;

/// What a download sends: the bytes themselves (a blob the hot cache holds,
/// or one small enough to read whole) or a stream from the store.
pub enum BlobBody {
    Bytes(Bytes),
    Stream(BlobStream),
}

/// Blobs held in memory by their digest, weighed by their bytes. A blob
/// never changes (its name is its digest), so an entry needs no
/// invalidation: a hit is always the stored bytes.
type HotBlobs = quick_cache::sync::Cache<Sha256Digest, Bytes, BlobWeight>;

#[derive(Debug, Clone)]
struct BlobWeight;

impl quick_cache::Weighter<Sha256Digest, Bytes> for BlobWeight {
    fn weight(&self, _key: &Sha256Digest, bytes: &Bytes) -> u64 {
        bytes.len().max(1) as u64
    }
}

fn io_error(e: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    }
}

/// `len` bytes of `file` from `offset`, read by position in
/// [`FILE_CHUNK`]s on blocking threads, one chunk ahead of the socket at
/// most (actix polls for the next chunk once the last one is written).
fn file_stream(file: std::fs::File, offset: u64, len: u64) -> BlobStream {
    use futures_util::StreamExt;
    futures_util::stream::try_unfold(
        (std::sync::Arc::new(file), offset, len),
        |(file, offset, left)| async move {
            if left == 0 {
                return Ok(None);
            }
            let n = left.min(FILE_CHUNK);
            let reader = std::sync::Arc::clone(&file);
            let chunk = tokio::task::spawn_blocking(move || read_at(&reader, offset, n))
                .await
                .map_err(|e| io_error(std::io::Error::other(e)))?
                .map_err(io_error)?;
            Ok(Some((chunk, (file, offset + n, left - n))))
        },
    )
    .boxed()
}

/// Exactly `len` bytes at `offset` (a file shorter than its record is an
/// error, not a short download).
fn read_at(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; usize::try_from(len).map_err(std::io::Error::other)?];
    file.read_exact_at(&mut buf, offset)?;
    Ok(Bytes::from(buf))
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("cannot create the storage folder {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error("object storage: {0}")]
    Store(#[from] object_store::Error),
    #[error("blob {} changed under us: its bytes do not match its key", .0.hex())]
    Corrupt(Sha256Digest),
}

/// Reads up to [`UPLOAD_CHUNK`] bytes: a full chunk unless the file ends.
async fn read_chunk(file: &mut tokio::fs::File, size: u64) -> std::io::Result<Bytes> {
    use tokio::io::AsyncReadExt;
    // A buffer of exactly the bytes expected: a `Bytes` made from a longer
    // one would keep the whole allocation alive.
    let mut buf = vec![
        0u8;
        usize::try_from(size)
            .unwrap_or(UPLOAD_CHUNK)
            .min(UPLOAD_CHUNK)
    ];
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    buf.truncate(filled);
    Ok(Bytes::from(buf))
}

/// Hard-links `source` to `dest`, creating its folders. An existing `dest`
/// holds the same bytes (its name is their digest): its modification time is
/// refreshed instead.
fn link_into(source: &std::path::Path, dest: &std::path::Path) -> std::io::Result<()> {
    // The folders usually exist: a link first, and folders only when missing.
    let linked = match std::fs::hard_link(source, dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::hard_link(source, dest)
        }
        other => other,
    };
    match linked {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::File::options()
            .write(true)
            .open(dest)?
            .set_modified(std::time::SystemTime::now()),
        other => other,
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Unreferenced blobs older than the grace period, now deleted.
    pub deleted: Vec<Sha256Digest>,
    /// Blobs some version refers to.
    pub referenced: usize,
    /// Unreferenced blobs younger than the grace period: possibly a publish
    /// in flight, kept.
    pub young: usize,
    /// Objects under the blob prefix whose key is not a blob key, left alone.
    pub foreign: usize,
}

/// The registry's blob store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    /// The same store when it is a local folder: spooled uploads are then
    /// linked into place instead of copied.
    local: Option<Arc<LocalFileSystem>>,
    /// The same store when it is S3, with the key prefix it writes under:
    /// downloads can then be handed out as presigned URLs.
    presigner: Option<(AmazonS3, String)>,
    multipart: Arc<tokio::sync::Semaphore>,
    /// Recently downloaded blobs up to [`HOT_BLOB_MAX`] each; `None` when
    /// the configured budget is 0.
    hot: Option<Arc<HotBlobs>>,
    hot_fills: Arc<tokio::sync::Semaphore>,
}

impl Blobs {
    /// Opens the configured store, creating a filesystem root if needed. An
    /// S3 call gives up after `timeout`, retries included, so an unreachable
    /// store fails requests instead of holding them.
    pub fn open(url: &StorageUrl, s3: &S3Settings, timeout: Duration) -> Result<Self, BlobError> {
        let mut local = None;
        let mut presigner = None;
        let store: Arc<dyn ObjectStore> = match url {
            StorageUrl::File(root) => {
                std::fs::create_dir_all(root).map_err(|source| BlobError::CreateDir {
                    path: root.display().to_string(),
                    source,
                })?;
                let store = Arc::new(LocalFileSystem::new_with_prefix(root)?);
                local = Some(Arc::clone(&store));
                store
            }
            StorageUrl::S3 { bucket, prefix } => {
                // Set by key, not by replacing the client options, which
                // would drop what `from_env` read (AWS_ALLOW_HTTP).
                let seconds = |d: Duration| format!("{}s", d.as_secs().max(1));
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_config(
                        AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                        seconds(timeout),
                    )
                    .with_config(
                        AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                        seconds(timeout.min(Duration::from_secs(5))),
                    )
                    .with_retry(RetryConfig {
                        max_retries: 2,
                        retry_timeout: timeout,
                        ..RetryConfig::default()
                    });
                if let Some(endpoint) = &s3.endpoint {
                    // S3-compatible servers are addressed by path, not by
                    // bucket subdomain, and often over plain HTTP locally.
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_virtual_hosted_style_request(false)
                        .with_allow_http(s3.allow_http.unwrap_or(endpoint.starts_with("http://")));
                } else if let Some(allow) = s3.allow_http {
                    builder = builder.with_allow_http(allow);
                }
                if let Some(region) = &s3.region {
                    builder = builder.with_region(region);
                }
                if let Some(key) = &s3.access_key_id {
                    builder = builder.with_access_key_id(key);
                }
                if let Some(secret) = &s3.secret_access_key {
                    builder = builder.with_secret_access_key(secret);
                }
                let s3 = builder.build()?;
                presigner = Some((s3.clone(), prefix.clone()));
                if prefix.is_empty() {
                    Arc::new(s3)
                } else {
                    Arc::new(PrefixStore::new(s3, prefix.as_str()))
                }
            }
        };
        Ok(Self {
            local,
            presigner,
            ..Self::from_store(store)
        })
    }

    /// Wraps any store (tests use the in-memory one).
    pub fn from_store(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            store,
            local: None,
            presigner: None,
            multipart: Arc::new(tokio::sync::Semaphore::new(MULTIPART_UPLOADS_AT_ONCE)),
            hot: None,
            hot_fills: Arc::new(tokio::sync::Semaphore::new(HOT_FILLS_AT_ONCE)),
        }
    }

    /// Keeps up to `bytes` of recently downloaded blobs in memory (0: none).
    pub fn with_hot_cache(mut self, bytes: u64) -> Self {
        self.hot = (bytes > 0).then(|| {
            // quick_cache sizes its tables by an estimate of the count:
            // assume small containers, most of a few KiB.
            let items = usize::try_from(bytes / 4096)
                .unwrap_or(usize::MAX)
                .clamp(16, 65_536);
            Arc::new(HotBlobs::with_weighter(items, bytes, BlobWeight))
        });
        self
    }

    /// `blobs/sha256/ab/cd/<hex>`.
    pub fn key(digest: &Sha256Digest) -> Path {
        let hex = digest.hex();
        let hex = hex.as_str();
        Path::from(format!("{BLOB_PREFIX}/{}/{}/{hex}", &hex[..2], &hex[2..4]))
    }

    fn digest_of_key(key: &Path) -> Option<Sha256Digest> {
        let rest = key.as_ref().strip_prefix(BLOB_PREFIX)?.strip_prefix('/')?;
        let mut parts = rest.split('/');
        let (a, b, hex, end) = (parts.next()?, parts.next()?, parts.next()?, parts.next());
        let digest = Sha256Digest::parse_hex(hex).ok()?;
        (end.is_none() && a == &hex[..2] && b == &hex[2..4]).then_some(digest)
    }

    /// Stores `bytes` under their digest and returns it. Storing bytes that
    /// are already there succeeds without rewriting them.
    pub async fn put(&self, bytes: Bytes) -> Result<Sha256Digest, BlobError> {
        let digest = Sha256Digest::of(&bytes);
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .store
            .put_opts(&Self::key(&digest), PutPayload::from_bytes(bytes), options)
            .await
        {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(digest),
            Err(e) => Err(e.into()),
        }
    }

    /// The blob's bytes, checked against its digest; `None` when absent.
    pub async fn get(&self, digest: &Sha256Digest) -> Result<Option<Bytes>, BlobError> {
        let result = match self.store.get(&Self::key(digest)).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let bytes = result.bytes().await?;
        if Sha256Digest::of(&bytes) != *digest {
            return Err(BlobError::Corrupt(*digest));
        }
        Ok(Some(bytes))
    }

    /// Stores the file at `path`, whose SHA-256 the caller computed while
    /// spooling it, under `digest`, never holding more of it in memory than
    /// [`UPLOAD_CHUNK`]: a local store links the file into place (no copy);
    /// otherwise small files go in one `put` and larger ones as a multipart
    /// upload of that part size, with at most [`MULTIPART_UPLOADS_AT_ONCE`]
    /// multipart uploads in flight.
    ///
    /// Unlike [`Blobs::put`] this refreshes an existing blob's modification
    /// time (its bytes are the same), so a sweep that started before this
    /// publish committed sees a young blob and keeps it.
    pub async fn put_file(
        &self,
        path: &std::path::Path,
        digest: &Sha256Digest,
    ) -> Result<(), BlobError> {
        let key = Self::key(digest);
        if let Some(local) = &self.local
            && let Ok(dest) = local.path_to_filesystem(&key)
        {
            let source = path.to_owned();
            // A spool on another filesystem cannot be linked: copy instead.
            if let Ok(Ok(())) = tokio::task::spawn_blocking(move || link_into(&source, &dest)).await
            {
                return Ok(());
            }
        }
        let io = |e: std::io::Error| {
            BlobError::Store(object_store::Error::Generic {
                store: "spool",
                source: Box::new(e),
            })
        };
        let mut file = tokio::fs::File::open(path).await.map_err(io)?;
        let size = file.metadata().await.map_err(io)?.len();
        if size <= UPLOAD_CHUNK as u64 {
            let bytes = read_chunk(&mut file, size).await.map_err(io)?;
            self.store.put(&key, PutPayload::from_bytes(bytes)).await?;
            return Ok(());
        }
        let _turn = self.multipart.acquire().await.map_err(|e| {
            BlobError::Store(object_store::Error::Generic {
                store: "spool",
                source: Box::new(e),
            })
        })?;
        let upload = self.store.put_multipart(&key).await?;
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, UPLOAD_CHUNK);
        let mut left = size;
        loop {
            // One part in flight plus one being read.
            writer.wait_for_capacity(1).await?;
            let chunk = match read_chunk(&mut file, left).await {
                Ok(chunk) => chunk,
                Err(e) => {
                    writer.abort().await?;
                    return Err(io(e));
                }
            };
            if chunk.is_empty() {
                break;
            }
            left = left.saturating_sub(chunk.len() as u64);
            writer.put(chunk);
        }
        writer.finish().await?;
        Ok(())
    }

    /// A URL that fetches the blob straight from S3 for `valid` (a SigV4
    /// presigned GET); `None` when the store is not S3. The URL is signed
    /// locally, without a request to S3, so a missing blob shows only when
    /// the client follows it.
    pub async fn presigned_url(
        &self,
        digest: &Sha256Digest,
        valid: Duration,
    ) -> Result<Option<object_store::signer::Url>, BlobError> {
        use object_store::signer::{Method, Signer};
        let Some((s3, prefix)) = &self.presigner else {
            return Ok(None);
        };
        let key = Self::key(digest);
        let path = if prefix.is_empty() {
            key
        } else {
            Path::from(format!("{prefix}/{key}"))
        };
        Ok(Some(s3.signed_url(Method::GET, &path, valid).await?))
    }

    /// The bytes `range` of the blob (all of it for `None`), read as a
    /// range from the store so only they cross the wire, with how many they
    /// are; `None` when the blob is absent. The bytes are not re-hashed:
    /// downloads are checked by the client against the digest in the `ETag`
    /// and the index.
    pub async fn get_range_stream(
        &self,
        digest: &Sha256Digest,
        range: Option<std::ops::Range<u64>>,
    ) -> Result<Option<(u64, BlobStream)>, BlobError> {
        let options = object_store::GetOptions {
            range: range.map(object_store::GetRange::Bounded),
            ..Default::default()
        };
        match self.store.get_opts(&Self::key(digest), options).await {
            Ok(result) => {
                let len = result.range.end - result.range.start;
                Ok(Some((len, result.into_stream())))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The bytes `range` (all for `None`) of a blob of `size` bytes, as a
    /// download sends them, with how many they are; `None` when the blob is
    /// absent. A blob of at most [`HOT_BLOB_MAX`] is read whole once and
    /// then served from memory while the hot cache keeps it (while
    /// [`HOT_FILLS_AT_ONCE`] fills run, others stream); a larger one streams
    /// from the store, a local file by position in large chunks.
    /// Not re-hashed: the client checks the bytes against the digest.
    pub async fn download(
        &self,
        digest: &Sha256Digest,
        size: u64,
        range: Option<std::ops::Range<u64>>,
    ) -> Result<Option<(u64, BlobBody)>, BlobError> {
        let slice = |bytes: &Bytes| match &range {
            Some(r) => bytes.slice(
                usize::try_from(r.start)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len())
                    ..usize::try_from(r.end)
                        .unwrap_or(usize::MAX)
                        .min(bytes.len()),
            ),
            None => bytes.clone(),
        };
        if let Some(hot) = &self.hot {
            if let Some(bytes) = hot.get(digest) {
                let part = slice(&bytes);
                return Ok(Some((part.len() as u64, BlobBody::Bytes(part))));
            }
            if size <= HOT_BLOB_MAX
                && let Ok(_fill) = self.hot_fills.try_acquire()
            {
                let Some(bytes) = self.read_whole(digest).await? else {
                    return Ok(None);
                };
                hot.insert(*digest, bytes.clone());
                let part = slice(&bytes);
                return Ok(Some((part.len() as u64, BlobBody::Bytes(part))));
            }
        }
        if let Some(local) = &self.local
            && let Ok(path) = local.path_to_filesystem(&Self::key(digest))
        {
            let opened = tokio::task::spawn_blocking(move || {
                let file = std::fs::File::open(&path)?;
                let len = file.metadata()?.len();
                Ok::<_, std::io::Error>((file, len))
            })
            .await
            .map_err(|e| BlobError::Store(io_error(std::io::Error::other(e))))?;
            let (file, len) = match opened {
                Ok(opened) => opened,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(BlobError::Store(io_error(e))),
            };
            let range = range.unwrap_or(0..len);
            let range = range.start.min(len)..range.end.min(len);
            let sent = range.end - range.start;
            return Ok(Some((
                sent,
                BlobBody::Stream(file_stream(file, range.start, sent)),
            )));
        }
        Ok(self
            .get_range_stream(digest, range)
            .await?
            .map(|(len, stream)| (len, BlobBody::Stream(stream))))
    }

    /// A whole blob from the store, without re-hashing; `None` when absent.
    async fn read_whole(&self, digest: &Sha256Digest) -> Result<Option<Bytes>, BlobError> {
        if let Some(local) = &self.local
            && let Ok(path) = local.path_to_filesystem(&Self::key(digest))
        {
            return match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
                Ok(Ok(bytes)) => Ok(Some(Bytes::from(bytes))),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Ok(Err(e)) => Err(BlobError::Store(io_error(e))),
                Err(e) => Err(BlobError::Store(io_error(std::io::Error::other(e)))),
            };
        }
        match self.store.get(&Self::key(digest)).await {
            Ok(result) => Ok(Some(result.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes a blob; a missing one is not an error. Only for a blob the
    /// caller just wrote and no version refers to (a publish that lost).
    pub async fn delete(&self, digest: &Sha256Digest) -> Result<(), BlobError> {
        match self.store.delete(&Self::key(digest)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn exists(&self, digest: &Sha256Digest) -> Result<bool, BlobError> {
        match self.store.head(&Self::key(digest)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// For readiness: the store answers a listing.
    pub async fn check(&self) -> Result<(), BlobError> {
        self.store
            .list_with_delimiter(Some(&Path::from(BLOB_PREFIX)))
            .await?;
        Ok(())
    }

    /// Deletes blobs that no digest in `referenced` names and that are older
    /// than `grace`. The grace period protects a publish in flight, which
    /// writes its blob before it commits the version that refers to it.
    /// Callers should read `referenced` as late as possible (see
    /// `service::sweep::sweep_unreferenced`).
    pub async fn sweep(
        &self,
        referenced: &HashSet<Sha256Digest>,
        grace: Duration,
    ) -> Result<SweepReport, BlobError> {
        let cutoff = time::OffsetDateTime::now_utc().unix_timestamp()
            - i64::try_from(grace.as_secs()).unwrap_or(i64::MAX);
        let mut report = SweepReport::default();
        let listing: Vec<_> = self
            .store
            .list(Some(&Path::from(BLOB_PREFIX)))
            .try_collect()
            .await?;
        for meta in listing {
            let Some(digest) = Self::digest_of_key(&meta.location) else {
                report.foreign += 1;
                continue;
            };
            if referenced.contains(&digest) {
                report.referenced += 1;
            } else if meta.last_modified.timestamp() > cutoff {
                report.young += 1;
            } else {
                match self.store.delete(&meta.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                        report.deleted.push(digest);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        report.deleted.sort();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use object_store::memory::InMemory;

    use super::*;

    fn memory() -> Blobs {
        Blobs::from_store(Arc::new(InMemory::new()))
    }

    #[test]
    fn keys_are_content_addressed_and_fanned_out() {
        let digest = Sha256Digest::of(b"hello");
        let hex = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert_eq!(digest.to_hex(), hex);
        assert_eq!(
            Blobs::key(&digest).as_ref(),
            format!("blobs/sha256/2c/f2/{hex}")
        );
        assert_eq!(Blobs::digest_of_key(&Blobs::key(&digest)), Some(digest));
        assert_eq!(
            Blobs::digest_of_key(&Path::from(format!("blobs/sha256/00/f2/{hex}"))),
            None
        );
    }

    #[tokio::test]
    async fn put_twice_is_harmless_and_get_checks_bytes() {
        let blobs = memory();
        let a = blobs.put(Bytes::from_static(b"container")).await.unwrap();
        let b = blobs.put(Bytes::from_static(b"container")).await.unwrap();
        assert_eq!(a, b);
        assert_eq!(
            blobs.get(&a).await.unwrap().as_deref(),
            Some(&b"container"[..])
        );
        let missing = Sha256Digest::of(b"nothing");
        assert_eq!(blobs.get(&missing).await.unwrap(), None);
        assert!(!blobs.exists(&missing).await.unwrap());
        assert!(blobs.exists(&a).await.unwrap());
    }

    #[tokio::test]
    async fn concurrent_puts_of_one_blob_both_succeed() {
        let blobs = memory();
        let bytes = Bytes::from(vec![7u8; 4096]);
        let (a, b) = tokio::join!(blobs.put(bytes.clone()), blobs.put(bytes.clone()));
        assert_eq!(a.unwrap(), b.unwrap());
    }

    #[tokio::test]
    async fn sweep_keeps_referenced_and_young_blobs() {
        let blobs = memory();
        let kept = blobs.put(Bytes::from_static(b"referenced")).await.unwrap();
        let orphan = blobs.put(Bytes::from_static(b"orphan")).await.unwrap();
        let referenced: HashSet<_> = [kept].into_iter().collect();

        // Everything is younger than an hour: nothing goes.
        let report = blobs
            .sweep(&referenced, Duration::from_secs(3600))
            .await
            .unwrap();
        assert_eq!((report.referenced, report.young), (1, 1));
        assert!(report.deleted.is_empty());

        // With no grace period the orphan goes and the referenced blob stays.
        let report = blobs.sweep(&referenced, Duration::ZERO).await.unwrap();
        assert_eq!(report.deleted, vec![orphan]);
        assert!(blobs.exists(&kept).await.unwrap());
        assert!(!blobs.exists(&orphan).await.unwrap());
    }
}
