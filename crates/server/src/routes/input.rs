//! Reading request bodies: logs (raw text, form or multipart) and dumps (files or an archive).

use crate::error::AppError;
use axum::{
    body::Body,
    extract::{FromRequest, Multipart, Request},
    http::{header, StatusCode},
};
use oomdoc_kb::Lang;
use std::{
    collections::HashMap,
    io::Write,
    path::{Component, Path, PathBuf},
};

/// A log as submitted, and whether the user asked us to keep it.
pub struct LogSubmission {
    pub bytes: Vec<u8>,
    pub store: bool,
    pub lang: Lang,
    /// The form's anti-forgery field, when sent ([`crate::csrf`]).
    pub csrf: Option<String>,
}

fn content_type(req: &Request) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn query_flag(req: &Request, name: &str) -> Option<String> {
    let q = req.uri().query()?;
    q.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=').map(str::to_string))
}

fn is_true(v: &str) -> bool {
    matches!(v, "1" | "true" | "on" | "yes")
}

fn multipart_error(e: axum::extract::multipart::MultipartError, what: &'static str, limit: usize) -> AppError {
    if crate::limits::is_too_slow(&e) {
        return too_slow();
    }
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::TooLarge { what, limit }
    } else {
        AppError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
    }
}

/// The client sent its body slower than the minimum upload rate: 408.
fn too_slow() -> AppError {
    AppError::Refused(crate::limits::Refusal {
        status: StatusCode::REQUEST_TIMEOUT,
        message: "the request body arrived slower than this server's minimum upload rate; send it again from a faster link".into(),
        retry_after: None,
    })
}

pub async fn read_body(body: Body, what: &'static str, limit: usize) -> Result<Vec<u8>, AppError> {
    match axum::body::to_bytes(body, limit).await {
        Ok(b) => Ok(b.to_vec()),
        Err(e) if crate::limits::is_too_slow(&e) => Err(too_slow()),
        Err(e) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit");
            if too_large {
                Err(AppError::TooLarge { what, limit })
            } else {
                Err(AppError::BadRequest(format!("could not read the request body: {e}")))
            }
        }
    }
}

/// A log from a raw body (`?store_log=1&lang=zh`), a urlencoded form, or multipart
/// with a `log` text field and/or a `file` upload (the file wins when both are given).
pub async fn read_log(req: Request, limit: usize) -> Result<LogSubmission, AppError> {
    const WHAT: &str = "the log";
    let ctype = content_type(&req);
    let mut sub = LogSubmission {
        bytes: Vec::new(),
        store: query_flag(&req, "store_log").is_some_and(|v| is_true(&v)),
        lang: crate::html::lang_of_query(req.uri().query()),
        csrf: None,
    };
    if ctype.starts_with("multipart/form-data") {
        let mut mp = Multipart::from_request(req, &()).await.map_err(|e| AppError::BadRequest(e.body_text()))?;
        let mut text = Vec::new();
        let mut file = Vec::new();
        while let Some(field) = mp.next_field().await.map_err(|e| multipart_error(e, WHAT, limit))? {
            let name = field.name().unwrap_or("").to_string();
            let data = field.bytes().await.map_err(|e| multipart_error(e, WHAT, limit))?;
            match name.as_str() {
                "log" => text = data.to_vec(),
                "file" => file = data.to_vec(),
                "store_log" => sub.store = is_true(String::from_utf8_lossy(&data).trim()),
                "lang" => sub.lang = Lang::parse(String::from_utf8_lossy(&data).trim()).unwrap_or(sub.lang),
                crate::csrf::FIELD => sub.csrf = Some(String::from_utf8_lossy(&data).into_owned()),
                _ => {}
            }
        }
        sub.bytes = if file.is_empty() { text } else { file };
    } else if ctype.starts_with("application/x-www-form-urlencoded") {
        // `curl --data-binary @train.log URL` sends its raw body with this content type: only
        // a well-formed form that has a `log` field is read as a form; anything else is the log.
        let raw = read_body(req.into_body(), WHAT, limit).await?;
        match serde_urlencoded::from_bytes::<HashMap<String, String>>(&raw) {
            Ok(form) if form.contains_key("log") => {
                sub.bytes = form.get("log").cloned().unwrap_or_default().into_bytes();
                sub.store |= form.get("store_log").is_some_and(|v| is_true(v));
                sub.csrf = form.get(crate::csrf::FIELD).cloned();
                if let Some(l) = form.get("lang").and_then(|l| Lang::parse(l)) {
                    sub.lang = l;
                }
            }
            _ => sub.bytes = raw,
        }
    } else {
        sub.bytes = read_body(req.into_body(), WHAT, limit).await?;
    }
    if sub.bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(AppError::BadRequest(
            "the log is empty: send it as the request body (curl --data-binary @train.log), a form field `log`, or a multipart `file`".into(),
        ));
    }
    Ok(sub)
}

/// An uploaded dump, unpacked into a private temporary directory (removed when the
/// last holder drops it: move it into the analysis so it outlives a cancelled request
/// only as long as the analysis winds down).
pub struct DumpUpload {
    pub dir: crate::tempdir::DumpDir,
    /// The directory to analyse.
    pub root: PathBuf,
    /// Bytes of dump on disk (an archive's unpacked total): what the analysis reads.
    pub bytes: u64,
    /// The upload form's anti-forgery field, when sent ([`crate::csrf`]).
    pub csrf: Option<String>,
}

/// What [`read_dump_with`] enforces.
#[derive(Clone, Debug)]
pub struct DumpOptions {
    /// Upload bytes, and an archive's unpacked bytes.
    pub limit: usize,
    /// Files in the upload / entries in an archive (every kind of entry counts).
    pub entries: usize,
    /// Directories an archive may create.
    pub dirs: usize,
    /// Parent of the upload directory.
    pub temp_dir: PathBuf,
    /// Checked in the upload and unpack loops.
    pub cancel: crate::limits::Cancel,
}

impl DumpOptions {
    pub fn new(limit: usize, resources: &crate::limits::ResourceLimits, cancel: crate::limits::Cancel) -> DumpOptions {
        DumpOptions {
            limit,
            entries: resources.archive_entries,
            dirs: resources.archive_dirs,
            temp_dir: resources.temp_dir.clone(),
            cancel,
        }
    }
}

/// Keep only a file's base name, so an upload cannot write outside the directory.
fn safe_file_name(name: Option<&str>, n: usize) -> String {
    let base = name.unwrap_or("").rsplit(['/', '\\']).next().unwrap_or("");
    let ok = !base.is_empty() && base != "." && base != ".." && !base.contains('\0');
    if ok { base.to_string() } else { format!("upload-{n}") }
}

/// A relative path inside an archive, or `None` for absolute paths and `..`.
fn safe_relative(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Stream every file field of a multipart body to disk, then unpack a single
/// `.zip` / `.tar.gz` / `.tgz` / `.tar`. The unpacked total is held to `limit` too,
/// so a small archive cannot expand into a disk-filling one.
pub async fn read_dump(req: Request, limit: usize) -> Result<DumpUpload, AppError> {
    let opts = DumpOptions::new(limit, &crate::limits::ResourceLimits::default(), crate::limits::Cancel::default());
    read_dump_with(req, &opts).await
}

/// [`read_dump`] with entry and directory caps, a temp-dir parent and cancellation.
pub async fn read_dump_with(req: Request, opts: &DumpOptions) -> Result<DumpUpload, AppError> {
    const WHAT: &str = "the dump";
    let limit = opts.limit;
    if !content_type(&req).starts_with("multipart/form-data") {
        return Err(AppError::BadRequest(
            "send the dump as multipart/form-data: several files, or one .zip/.tar.gz of the dump directory".into(),
        ));
    }
    let dir = crate::tempdir::DumpDir::create(&opts.temp_dir).map_err(|e| AppError::Internal(format!("temp dir: {e}")))?;
    let upload_dir = dir.path().join("upload");
    std::fs::create_dir(&upload_dir).map_err(|e| AppError::Internal(format!("temp dir: {e}")))?;
    let mut mp = Multipart::from_request(req, &()).await.map_err(|e| AppError::BadRequest(e.body_text()))?;
    let mut files = Vec::new();
    let mut bytes: u64 = 0;
    let mut csrf = None;
    while let Some(mut field) = mp.next_field().await.map_err(|e| multipart_error(e, WHAT, limit))? {
        if field.file_name().is_none() {
            if field.name() == Some(crate::csrf::FIELD) {
                let text = field.bytes().await.map_err(|e| multipart_error(e, WHAT, limit))?;
                csrf = Some(String::from_utf8_lossy(&text[..text.len().min(256)]).into_owned());
            }
            continue;
        }
        if files.len() >= opts.entries {
            return Err(too_many("files in the upload", opts.entries));
        }
        let name = safe_file_name(field.file_name(), files.len());
        let path = upload_dir.join(&name);
        let mut out = std::fs::File::create(&path).map_err(|e| AppError::Internal(format!("{}: {e}", path.display())))?;
        while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(e, WHAT, limit))? {
            if opts.cancel.is_cancelled() {
                return Err(AppError::Refused(crate::limits::Refusal::cancelled()));
            }
            bytes += chunk.len() as u64;
            out.write_all(&chunk).map_err(|e| AppError::Internal(format!("{}: {e}", path.display())))?;
        }
        files.push(path);
    }
    if files.is_empty() {
        return Err(AppError::BadRequest("no file in the upload: choose the dump's files or one archive".into()));
    }
    let root = if files.len() == 1 && is_archive(&files[0]) {
        let archive = files[0].clone();
        let into = dir.path().join("dump");
        // The task holds the directory: if this request is dropped, the unpack sees the
        // cancellation, stops, and the directory goes with the task's handle.
        let (held, caps) = (dir.clone(), Caps { bytes: limit as u64, entries: opts.entries, dirs: opts.dirs });
        let cancel = opts.cancel.clone();
        let (root, unpacked) = tokio::task::spawn_blocking(move || {
            let _held = held;
            unpack(&archive, &into, caps, &cancel).map(|n| (into, n))
        })
        .await??;
        bytes = unpacked;
        root
    } else {
        upload_dir
    };
    Ok(DumpUpload { root: single_subdirectory(root), dir, bytes, csrf })
}

fn too_many(what: &str, cap: usize) -> AppError {
    AppError::Refused(crate::limits::Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        message: format!(
            "the dump has more {what} than this server's limit of {cap}; upload only the module's dump files (oomdoc serve --help lists the limits)"
        ),
        retry_after: None,
    })
}

fn is_archive(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    n.ends_with(".zip") || n.ends_with(".tar.gz") || n.ends_with(".tgz") || n.ends_with(".tar")
}

/// An archive of `dump/` unpacks to one directory: analyse that directory.
fn single_subdirectory(root: PathBuf) -> PathBuf {
    let Ok(rd) = std::fs::read_dir(&root) else { return root };
    let children: Vec<_> = rd.flatten().collect();
    match children.as_slice() {
        [only] if only.path().is_dir() => single_subdirectory(only.path()),
        _ => root,
    }
}

fn bad_archive(e: impl std::fmt::Display) -> AppError {
    AppError::Unprocessable(format!("cannot unpack the archive: {e}"))
}

/// Caps on what an archive may unpack to.
#[derive(Clone, Copy, Debug)]
struct Caps {
    bytes: u64,
    entries: usize,
    dirs: usize,
}

/// Unpack `archive` into `into`; returns the bytes written. Every entry counts toward
/// `caps.entries` (skipped ones included: a million empty entries cost time too), every
/// directory created toward `caps.dirs`, and `cancel` is checked per entry and per read.
fn unpack(archive: &Path, into: &Path, caps: Caps, cancel: &crate::limits::Cancel) -> Result<u64, AppError> {
    use crate::limits::{CancelReader, Refusal};
    std::fs::create_dir_all(into).map_err(|e| AppError::Internal(e.to_string()))?;
    let name = archive.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    let file = std::fs::File::open(archive).map_err(|e| AppError::Internal(e.to_string()))?;
    let limit = usize::try_from(caps.bytes).unwrap_or(usize::MAX);
    let mut written: u64 = 0;
    let mut entries = 0usize;
    let mut dirs: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut next_entry = |cancel: &crate::limits::Cancel| -> Result<(), AppError> {
        if cancel.is_cancelled() {
            return Err(AppError::Refused(Refusal::cancelled()));
        }
        entries += 1;
        if entries > caps.entries {
            return Err(too_many("entries in the archive", caps.entries));
        }
        Ok(())
    };
    let mut copy = |rel: &Path, reader: &mut dyn std::io::Read| -> Result<(), AppError> {
        let target = into.join(rel);
        // Count the directories this file needs that do not exist yet.
        let mut parent = rel.parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            if !dirs.insert(p.to_path_buf()) {
                break;
            }
            if dirs.len() > caps.dirs {
                return Err(too_many("directories in the archive", caps.dirs));
            }
            parent = p.parent();
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| AppError::Internal(e.to_string()))?;
        }
        let mut out = std::fs::File::create(&target).map_err(|e| AppError::Internal(e.to_string()))?;
        let budget = caps.bytes.saturating_sub(written);
        let mut reader = CancelReader { inner: std::io::Read::take(reader, budget + 1), cancel: cancel.clone() };
        let n = match std::io::copy(&mut reader, &mut out) {
            Ok(n) => n,
            Err(_) if cancel.is_cancelled() => return Err(AppError::Refused(Refusal::cancelled())),
            Err(e) => return Err(bad_archive(e)),
        };
        written += n;
        if written > caps.bytes {
            return Err(AppError::TooLarge { what: "the unpacked dump", limit });
        }
        Ok(())
    };
    if name.ends_with(".zip") {
        let mut zip = zip::ZipArchive::new(file).map_err(bad_archive)?;
        // The central directory says how many entries there are: refuse before unpacking.
        if zip.len() > caps.entries {
            return Err(too_many("entries in the archive", caps.entries));
        }
        for i in 0..zip.len() {
            next_entry(cancel)?;
            let mut entry = zip.by_index(i).map_err(bad_archive)?;
            if entry.is_dir() {
                continue;
            }
            let Some(rel) = entry.enclosed_name().and_then(|p| safe_relative(&p)) else { continue };
            copy(&rel, &mut entry)?;
        }
    } else {
        let reader: Box<dyn std::io::Read> = if name.ends_with(".tar") {
            Box::new(file)
        } else {
            Box::new(flate2::read::GzDecoder::new(file))
        };
        let mut tar = tar::Archive::new(CancelReader { inner: reader, cancel: cancel.clone() });
        for entry in tar.entries().map_err(bad_archive)? {
            next_entry(cancel)?;
            let mut entry = entry.map_err(|e| if cancel.is_cancelled() { AppError::Refused(Refusal::cancelled()) } else { bad_archive(e) })?;
            // Regular files only: links could point outside the directory.
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let Some(rel) = entry.path().ok().and_then(|p| safe_relative(&p)) else { continue };
            copy(&rel, &mut entry)?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_names_cannot_escape() {
        assert_eq!(safe_file_name(Some("../../etc/passwd"), 0), "passwd");
        assert_eq!(safe_file_name(Some(".."), 3), "upload-3");
        assert_eq!(safe_file_name(Some("C:\\x\\module.hlo.txt"), 0), "module.hlo.txt");
        assert_eq!(safe_relative(Path::new("/abs/x")), None);
        assert_eq!(safe_relative(Path::new("a/../../x")), None);
        assert_eq!(safe_relative(Path::new("./dump/a.txt")), Some(PathBuf::from("dump/a.txt")));
    }

    fn tar_gz(entries: impl Iterator<Item = (String, Vec<u8>)>) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut t = tar::Builder::new(gz);
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            t.append_data(&mut h, &name, &data[..]).unwrap();
        }
        t.into_inner().unwrap().finish().unwrap()
    }

    fn unpack_bytes(name: &str, bytes: &[u8], caps: Caps, cancel: &crate::limits::Cancel) -> (Result<u64, AppError>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join(name);
        std::fs::write(&archive, bytes).unwrap();
        let into = dir.path().join("dump");
        let r = unpack(&archive, &into, caps, cancel);
        let files = walk_count(&into);
        (r, files)
    }

    fn walk_count(p: &Path) -> usize {
        std::fs::read_dir(p).map(|rd| rd.flatten().map(|e| if e.path().is_dir() { 1 + walk_count(&e.path()) } else { 1 }).sum()).unwrap_or(0)
    }

    fn status(r: &Result<u64, AppError>) -> StatusCode {
        r.as_ref().map_err(|e| e.status()).err().unwrap_or(StatusCode::OK)
    }

    const CAPS: Caps = Caps { bytes: 1 << 20, entries: 100, dirs: 10 };

    #[test]
    fn an_archive_of_many_empty_files_is_refused_at_the_entry_cap() {
        // The million-empty-files archive at small scale: 5 000 empty entries, cap 100.
        let many = tar_gz((0..5_000).map(|i| (format!("d/f{i}"), Vec::new())));
        let (r, written) = unpack_bytes("many.tar.gz", &many, CAPS, &crate::limits::Cancel::default());
        assert_eq!(status(&r), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(written <= 101, "stopped at the cap, wrote {written}");
        let AppError::Refused(refusal) = r.unwrap_err() else { panic!("not a refusal") };
        assert!(refusal.message.contains("entries") && refusal.message.contains("100"), "{}", refusal.message);
        // At the cap exactly, it unpacks.
        let ok = tar_gz((0..100).map(|i| (format!("d/f{i}"), b"x".to_vec())));
        let (r, _) = unpack_bytes("ok.tgz", &ok, CAPS, &crate::limits::Cancel::default());
        assert_eq!(r.unwrap(), 100);
    }

    #[test]
    fn a_zip_with_too_many_entries_is_refused_before_unpacking() {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut z = zip::ZipWriter::new(&mut buf);
            for i in 0..101 {
                z.start_file(format!("f{i}"), zip::write::SimpleFileOptions::default()).unwrap();
            }
            z.finish().unwrap();
        }
        let (r, written) = unpack_bytes("many.zip", buf.get_ref(), CAPS, &crate::limits::Cancel::default());
        assert_eq!(status(&r), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(written, 0);
    }

    #[test]
    fn directories_are_capped_deep_or_wide() {
        let deep = tar_gz(std::iter::once(((0..50).map(|i| format!("d{i}")).collect::<Vec<_>>().join("/") + "/f", b"x".to_vec())));
        let (r, _) = unpack_bytes("deep.tar.gz", &deep, CAPS, &crate::limits::Cancel::default());
        assert_eq!(status(&r), StatusCode::PAYLOAD_TOO_LARGE);
        let wide = tar_gz((0..20).map(|i| (format!("d{i}/f"), b"x".to_vec())));
        let (r, written) = unpack_bytes("wide.tar.gz", &wide, CAPS, &crate::limits::Cancel::default());
        assert_eq!(status(&r), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(written <= 2 * 10, "{written}");
        let fits = tar_gz((0..10).map(|i| (format!("d{i}/f"), b"x".to_vec())));
        assert_eq!(unpack_bytes("fits.tar.gz", &fits, CAPS, &crate::limits::Cancel::default()).0.unwrap(), 10);
    }

    #[test]
    fn a_cancelled_request_stops_unpacking() {
        let some = tar_gz((0..50).map(|i| (format!("f{i}"), vec![b'x'; 100])));
        let cancel = crate::limits::Cancel::default();
        cancel.cancel();
        let (r, written) = unpack_bytes("some.tar.gz", &some, CAPS, &cancel);
        assert_eq!(status(&r), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(written, 0);
        // A passed deadline is a cancellation too.
        let late = crate::limits::Cancel::new(Some(std::time::Instant::now()));
        assert_eq!(status(&unpack_bytes("some.tar.gz", &some, CAPS, &late).0), StatusCode::SERVICE_UNAVAILABLE);
    }
}
