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
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::TooLarge { what, limit }
    } else {
        AppError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
    }
}

pub async fn read_body(body: Body, what: &'static str, limit: usize) -> Result<Vec<u8>, AppError> {
    match axum::body::to_bytes(body, limit).await {
        Ok(b) => Ok(b.to_vec()),
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

/// An uploaded dump, unpacked into a private temporary directory (removed on drop).
pub struct DumpUpload {
    _dir: tempfile::TempDir,
    /// The directory to analyse.
    pub root: PathBuf,
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
    const WHAT: &str = "the dump";
    if !content_type(&req).starts_with("multipart/form-data") {
        return Err(AppError::BadRequest(
            "send the dump as multipart/form-data: several files, or one .zip/.tar.gz of the dump directory".into(),
        ));
    }
    let dir = tempfile::Builder::new()
        .prefix("oomdoc-dump-")
        .tempdir()
        .map_err(|e| AppError::Internal(format!("temp dir: {e}")))?;
    let upload_dir = dir.path().join("upload");
    std::fs::create_dir(&upload_dir).map_err(|e| AppError::Internal(format!("temp dir: {e}")))?;
    let mut mp = Multipart::from_request(req, &()).await.map_err(|e| AppError::BadRequest(e.body_text()))?;
    let mut files = Vec::new();
    while let Some(mut field) = mp.next_field().await.map_err(|e| multipart_error(e, WHAT, limit))? {
        if field.file_name().is_none() {
            continue;
        }
        let name = safe_file_name(field.file_name(), files.len());
        let path = upload_dir.join(&name);
        let mut out = std::fs::File::create(&path).map_err(|e| AppError::Internal(format!("{}: {e}", path.display())))?;
        while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(e, WHAT, limit))? {
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
        tokio::task::spawn_blocking(move || unpack(&archive, &into, limit).map(|_| into)).await??
    } else {
        upload_dir
    };
    Ok(DumpUpload { root: single_subdirectory(root), _dir: dir })
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

fn unpack(archive: &Path, into: &Path, limit: usize) -> Result<(), AppError> {
    std::fs::create_dir_all(into).map_err(|e| AppError::Internal(e.to_string()))?;
    let name = archive.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    let file = std::fs::File::open(archive).map_err(|e| AppError::Internal(e.to_string()))?;
    let mut written: u64 = 0;
    let mut copy = |rel: &Path, reader: &mut dyn std::io::Read| -> Result<(), AppError> {
        let target = into.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| AppError::Internal(e.to_string()))?;
        }
        let mut out = std::fs::File::create(&target).map_err(|e| AppError::Internal(e.to_string()))?;
        let budget = (limit as u64).saturating_sub(written);
        let n = std::io::copy(&mut std::io::Read::take(reader, budget + 1), &mut out).map_err(bad_archive)?;
        written += n;
        if written > limit as u64 {
            return Err(AppError::TooLarge { what: "the unpacked dump", limit });
        }
        Ok(())
    };
    if name.ends_with(".zip") {
        let mut zip = zip::ZipArchive::new(file).map_err(bad_archive)?;
        for i in 0..zip.len() {
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
        let mut tar = tar::Archive::new(reader);
        for entry in tar.entries().map_err(bad_archive)? {
            let mut entry = entry.map_err(bad_archive)?;
            // Regular files only: links could point outside the directory.
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let Some(rel) = entry.path().ok().and_then(|p| safe_relative(&p)) else { continue };
            copy(&rel, &mut entry)?;
        }
    }
    Ok(())
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
}
