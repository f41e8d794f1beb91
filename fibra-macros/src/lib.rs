//! The attribute macros of [fibra](https://docs.rs/fibra): `#[fibra::main]`
//! and `#[fibra::test]`. Use them through the `fibra` crate (its default
//! feature `macros` re-exports them); this crate is not meant to be named
//! directly.
//!
//! Both turn an `async fn` into a plain one that starts a fibra
//! [`Runtime`](https://docs.rs/fibra/latest/fibra/struct.Runtime.html) and
//! runs the body on it with `Runtime::block_on`, as tokio's attributes do.
//!
//! Options (both attributes):
//!
//! | option | values | default |
//! |---|---|---|
//! | `flavor` | `"multi_thread"`, `"current_thread"` | `main`: `"multi_thread"`; `test`: `"current_thread"` |
//! | `workers` (alias `worker_threads`) | an integer ≥ 1; multi-thread only | one per core |
//! | `crate` | a path to the `fibra` crate, as a string | `"::fibra"` |

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Error, ItemFn, LitInt, LitStr, Path, ReturnType};

/// Runs an `async fn main` on a fibra runtime.
///
/// ```
/// #[fibra::main]
/// async fn main() {
///     let (tx, rx) = fibra::channel::<u32>();
///     fibra::spawn(async move { tx.send(7).await.unwrap() });
///     assert_eq!(rx.recv().await, Ok(7));
/// }
/// ```
///
/// expands to (roughly)
///
/// ```text
/// fn main() {
///     let body = async move {
///         // the body
///     };
///     fibra::Runtime::builder().build().expect("...").block_on(body)
/// }
/// ```
///
/// Options: `flavor = "current_thread"` (tasks run on the main thread, no
/// worker threads) or `flavor = "multi_thread"` (the default), `workers = N`
/// (multi-thread: the number of worker threads; default one per core),
/// `crate = "path"` (where the `fibra` crate is, if renamed). The body
/// becomes a task, so it must be `Send` and own what it uses, as for
/// [`fibra::spawn`](https://docs.rs/fibra/latest/fibra/fn.spawn.html).
/// `main` may return a `Result`:
///
/// ```
/// #[fibra::main(workers = 2)]
/// async fn main() -> Result<(), fibra::RecvError> {
///     let (tx, rx) = fibra::bounded::<&str>(1);
///     tx.send("hi").await.unwrap();
///     println!("{}", rx.recv().await?);
///     Ok(())
/// }
/// ```
///
/// The function must be `async` and take no arguments:
///
/// ```compile_fail
/// #[fibra::main]
/// fn main() {}
/// ```
///
/// ```compile_fail
/// #[fibra::main(workers = 2, flavor = "current_thread")] // no workers there
/// async fn main() {}
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Main)
}

/// Runs an `async fn` test on a fibra runtime: a `#[test]` whose body is
/// awaited on a fresh runtime, current-thread unless told otherwise (as
/// tokio's `#[tokio::test]`). Doc tests compile `#[test]`s without running
/// them; the `fibra` crate's `tests/macros.rs` runs tests like these.
///
/// ```
/// #[fibra::test]
/// async fn ping_pong() {
///     let (tx, rx) = fibra::channel::<u32>();
///     let echo = fibra::spawn(async move { rx.recv().await.unwrap() + 1 });
///     tx.send(1).await.unwrap();
///     assert_eq!(echo.await.unwrap(), 2);
/// }
/// ```
///
/// Options as for [`macro@main`]: `flavor = "multi_thread"` with
/// `workers = N` runs the test on worker threads.
///
/// ```
/// #[fibra::test(flavor = "multi_thread", workers = 2)]
/// async fn on_two_workers() -> Result<(), fibra::RecvError> {
///     let (tx, rx) = fibra::bounded(1);
///     fibra::spawn(async move { tx.send(5).await.unwrap() });
///     assert_eq!(rx.recv().await?, 5);
///     Ok(())
/// }
/// ```
///
/// Only one test attribute per function:
///
/// ```compile_fail
/// #[fibra::test]
/// #[test]
/// async fn twice() {}
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Test)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Main => "fibra::main",
            Kind::Test => "fibra::test",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    MultiThread,
    CurrentThread,
}

struct Options {
    flavor: Flavor,
    /// The `flavor` option's span, if given (to point at a conflict).
    flavor_span: Option<Span>,
    workers: Option<LitInt>,
    krate: Path,
}

fn parse_options(args: TokenStream, kind: Kind) -> syn::Result<Options> {
    let mut opts = Options {
        flavor: match kind {
            Kind::Main => Flavor::MultiThread,
            Kind::Test => Flavor::CurrentThread,
        },
        flavor_span: None,
        workers: None,
        krate: syn::parse_quote!(::fibra),
    };
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("flavor") {
            let lit: LitStr = meta.value()?.parse()?;
            opts.flavor = match lit.value().as_str() {
                "multi_thread" => Flavor::MultiThread,
                "current_thread" => Flavor::CurrentThread,
                other => {
                    return Err(Error::new(
                        lit.span(),
                        format!(
                            "unknown flavor `{other}`: use \"multi_thread\" or \"current_thread\""
                        ),
                    ));
                }
            };
            opts.flavor_span = Some(lit.span());
            Ok(())
        } else if meta.path.is_ident("workers") || meta.path.is_ident("worker_threads") {
            let lit: LitInt = meta.value()?.parse()?;
            match lit.base10_parse::<usize>() {
                Ok(0) => Err(Error::new(lit.span(), "`workers` must be at least 1")),
                Ok(_) => {
                    opts.workers = Some(lit);
                    Ok(())
                }
                Err(e) => Err(Error::new(lit.span(), e)),
            }
        } else if meta.path.is_ident("crate") {
            let lit: LitStr = meta.value()?.parse()?;
            opts.krate = lit.parse()?;
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown option of #[{}]: the options are `flavor = \"multi_thread\" | \
                 \"current_thread\"`, `workers = N` and `crate = \"path\"`",
                kind.name()
            )))
        }
    });
    syn::parse::Parser::parse(parser, args)?;
    if let (Some(w), Flavor::CurrentThread) = (&opts.workers, opts.flavor) {
        let mut e = Error::new(
            w.span(),
            "`workers` applies to the multi-thread flavour only: a current-thread runtime \
             runs its tasks on the calling thread",
        );
        if let Some(f) = opts.flavor_span {
            e.combine(Error::new(f, "the flavour is set to current_thread here"));
        } else {
            e.combine(Error::new(
                w.span(),
                "#[fibra::test] is current-thread unless `flavor = \"multi_thread\"` is given",
            ));
        }
        return Err(e);
    }
    Ok(opts)
}

fn expand(args: TokenStream, item: TokenStream, kind: Kind) -> TokenStream {
    let input: ItemFn = match syn::parse(item.clone()) {
        Ok(f) => f,
        // Not a function: say so, and keep the item so that other errors
        // in it are still reported.
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(TokenStream2::from(item));
            return out.into();
        }
    };
    match parse_options(args, kind).and_then(|opts| rewrite(input.clone(), &opts, kind)) {
        Ok(out) => out.into(),
        Err(e) => {
            // Keep the function (without `async`, so it still type-checks
            // as the entry point it claims to be) to avoid a cascade of
            // errors such as "`main` function not found".
            let mut f = input;
            f.sig.asyncness = None;
            let mut out = e.to_compile_error();
            out.extend(quote!(#f));
            out.into()
        }
    }
}

fn rewrite(mut f: ItemFn, opts: &Options, kind: Kind) -> syn::Result<TokenStream2> {
    if f.sig.asyncness.is_none() {
        return Err(Error::new(
            f.sig.fn_token.span(),
            format!(
                "#[{}] goes on an `async fn`: the `async` keyword is missing",
                kind.name()
            ),
        ));
    }
    if !f.sig.inputs.is_empty() {
        return Err(Error::new(
            f.sig.inputs.span(),
            format!("#[{}] functions take no arguments", kind.name()),
        ));
    }
    if !f.sig.generics.params.is_empty() {
        return Err(Error::new(
            f.sig.generics.span(),
            format!("#[{}] functions take no generic parameters", kind.name()),
        ));
    }
    if kind == Kind::Test {
        if let Some(attr) = f.attrs.iter().find(|a| is_test_attr(a.path())) {
            return Err(Error::new(
                attr.span(),
                "a second test attribute: #[fibra::test] already makes this a `#[test]`",
            ));
        }
    }
    f.sig.asyncness = None;
    let krate = &opts.krate;
    let output = match &f.sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    let flavor = match opts.flavor {
        Flavor::MultiThread => quote!(.multi_thread()),
        Flavor::CurrentThread => quote!(.current_thread()),
    };
    let workers = opts
        .workers
        .as_ref()
        .map(|w| quote_spanned!(w.span()=> .workers(#w)));
    let body = &f.block;
    let test_attr = (kind == Kind::Test).then(|| quote!(#[::core::prelude::v1::test]));
    let name = kind.name();
    // The body's span for the runtime call, so errors about it (a future
    // that is not `Send`) point at the body rather than the attribute.
    let block_on = quote_spanned! {body.span()=>
        #krate::Runtime::builder()
            #flavor
            #workers
            .build()
            .expect(concat!("#[", #name, "]: could not start the fibra runtime"))
            .block_on(__fibra_body)
    };
    let attrs = &f.attrs;
    let vis = &f.vis;
    let sig = &f.sig;
    Ok(quote! {
        #test_attr
        #(#attrs)*
        #vis #sig {
            // Names the body's output, so that `?` and `return` in it infer
            // (the compiler reads a future's output from this bound).
            fn __fibra_output<T, F: ::core::future::Future<Output = T>>(f: F) -> F {
                f
            }
            let __fibra_body = __fibra_output::<#output, _>(async move #body);
            #block_on
        }
    })
}

fn is_test_attr(path: &Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    matches!(
        segs.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["test"] | ["core" | "std", "prelude", _, "test"] | [_, "test"]
    )
}
