//! The module graph reads bottom-up (`docs/architecture.md`): a module may
//! name, through a `crate::` (or `$crate::`) path, only its own layer and
//! the layers below it. This test reads every file under `src/` and fails
//! with the file and line of each path that points up.
//!
//! Test code (`loom_models.rs` and inline `mod tests`) may also use any item
//! the crate root re-exports, as a user would, to build a scenario; paths
//! into another module's internals obey the order there too.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may import its own layer and those
/// below it.
const LAYERS: &[&[&str]] = &[
    &["loom", "wake", "coop", "trace"],
    &["op"],
    &["time"],
    &["chan"],
    &["sync"],
    &["mailbox"],
    &["select"],
    &["rt"],
    &["net"],
    &["actors"],
];

/// Upward imports allowed anyway: `(file under src/, module it names)`.
/// None: keep it that way.
const ALLOWED: &[(&str, &str)] = &[];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a line: without a `//` comment (doc comments included).
fn code(line: &str) -> &str {
    match line.find("//") {
        Some(i) if !line[..i].contains('"') => &line[..i],
        _ => line,
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The names a crate root re-exports (`pub use m::{A, b, ...};`) and the
/// module each comes from, plus every exported macro's module.
fn root_names(src: &Path, files: &[(String, String)]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let lib: String = lib.lines().map(|l| format!("{}\n", code(l))).collect();
    let mut rest = lib.as_str();
    while let Some(i) = rest.find("pub use ") {
        rest = &rest[i + "pub use ".len()..];
        let end = rest.find(';').unwrap();
        let item = &rest[..end];
        let (module, list) = item.split_once("::").unwrap();
        let list = list.trim().trim_start_matches('{').trim_end_matches('}');
        for name in list.split(',') {
            let name = name.trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.trim().to_string());
            }
        }
        rest = &rest[end..];
    }
    for (module, text) in files {
        for line in text.lines() {
            if let Some(after) = code(line).trim().strip_prefix("macro_rules! ") {
                let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
                names.insert(name, module.clone());
            }
        }
    }
    names
}

/// Every `crate::` path in `text`: (line number, first segment), with the
/// items of a `crate::{...}` group each counted.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().map(code).collect();
    let joined: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let line_of = |at: usize| joined[..at].matches('\n').count() + 1;
    let mut from = 0;
    while let Some(i) = joined[from..].find("crate::") {
        let at = from + i;
        from = at + "crate::".len();
        // Skip `foo_crate::` and the like.
        if joined[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let after = &joined[from..];
        if after.starts_with('{') {
            // A group: its top-level items, each by its first segment.
            let mut depth = 0;
            let mut start = from + 1;
            for (j, c) in after.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let item = joined[start..from + j].trim();
                        let name: String = item.chars().take_while(|&c| is_ident(c)).collect();
                        if !name.is_empty() && name != "self" {
                            found.push((
                                line_of(
                                    start
                                        + (joined[start..].len()
                                            - joined[start..].trim_start().len()),
                                ),
                                name,
                            ));
                        }
                        start = from + j + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                found.push((line_of(at), name));
            }
        }
    }
    found
}

/// Where the test code of a file starts: the whole file for a
/// `loom_models.rs`, else the line of a `mod tests` under a `cfg(test)`.
fn test_code_from(rel: &str, text: &str) -> usize {
    if rel.ends_with("loom_models.rs") {
        return 0;
    }
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let l = line.trim();
        if l.starts_with("mod tests")
            && i > 0
            && lines[i - 1].contains("cfg(")
            && lines[i - 1].contains("test")
        {
            return i + 1;
        }
    }
    usize::MAX
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    let mut files = Vec::new();
    for path in &paths {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "lib.rs" {
            continue; // the root declares and re-exports every layer
        }
        let module = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        files.push((rel, module, fs::read_to_string(path).unwrap()));
    }
    let by_module: Vec<(String, String)> = files
        .iter()
        .map(|(_, m, t)| (m.clone(), t.clone()))
        .collect();
    let roots = root_names(&src, &by_module);

    let mut errors = Vec::new();
    let mut allowed_used = vec![false; ALLOWED.len()];
    for (rel, module, text) in &files {
        let Some(mine) = rank(module) else {
            errors.push(format!("src/{rel}: module `{module}` is in no layer (add it to LAYERS and docs/architecture.md)"));
            continue;
        };
        let tests_from = test_code_from(rel, text);
        for (line, first) in crate_paths(text) {
            let (target, via_root) = if rank(&first).is_some() {
                (first.clone(), false)
            } else if let Some(m) = roots.get(&first) {
                (m.clone(), true)
            } else {
                errors.push(format!(
                    "src/{rel}:{line}: `crate::{first}` names no module, root re-export or macro"
                ));
                continue;
            };
            let Some(theirs) = rank(&target) else {
                errors.push(format!(
                    "src/{rel}:{line}: `crate::{first}` is in module `{target}`, in no layer"
                ));
                continue;
            };
            if theirs <= mine || (via_root && line >= tests_from) {
                continue;
            }
            if let Some(k) = ALLOWED.iter().position(|&(f, m)| f == rel && m == target) {
                allowed_used[k] = true;
                continue;
            }
            errors.push(format!(
                "src/{rel}:{line}: `{module}` imports `{target}` (`crate::{first}`), a layer above its own"
            ));
        }
    }
    for (k, used) in allowed_used.iter().enumerate() {
        if !used {
            errors.push(format!(
                "ALLOWED entry {:?} is no longer needed: remove it",
                ALLOWED[k]
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "upward imports (docs/architecture.md):\n{}",
        errors.join("\n")
    );
}
