//! The museum: the library scenarios that reproduce a public bug report,
//! listed with their source, their lesson and their upstream fixes. An
//! entry opens in the playground already run (with the fixes ticked on its
//! card turned on), its first violation selected and explained; each card
//! also has the snippet that embeds the entry in another page.
//!
//! An entry is any library scenario that names its `source`; what the card
//! shows is the scenario's own data, so a new entry needs no code here.

use recon_scenario::Check;

/// One museum entry, as its card shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The library scenario's name (what `?scenario=` takes).
    pub name: String,
    /// The public issue it reproduces.
    pub source: String,
    /// What a reader should take away, in one line.
    pub lesson: String,
    /// The checks it breaks with no fix on.
    pub expected: Vec<Check>,
    /// Its upstream fixes: name and one-sentence summary.
    pub fixes: Vec<(String, String)>,
}

/// Every museum entry, in library order.
pub fn entries() -> Vec<Entry> {
    recon_catalog::SCENARIOS
        .iter()
        .filter_map(|library| {
            // A broken library file is a test failure elsewhere, not a missing card here.
            let scenario = recon_scenario::parse(&format!("{}.yaml", library.name), library.yaml).ok()?;
            (!scenario.source.is_empty()).then(|| Entry {
                name: scenario.name,
                source: scenario.source,
                lesson: scenario.lesson,
                expected: scenario.expect.violations,
                fixes: scenario.fixes.into_iter().map(|f| (f.name, f.summary)).collect(),
            })
        })
        .collect()
}

/// A link to a GitHub issue or pull request as people write it
/// (`kubernetes/kubernetes#59848`); any other link as it is.
pub fn issue_label(url: &str) -> String {
    let path = url.strip_prefix("https://github.com/").unwrap_or_default();
    match path.split('/').collect::<Vec<_>>()[..] {
        [owner, repo, "issues" | "pull", number, ..] if !number.is_empty() => format!("{owner}/{repo}#{number}"),
        _ => url.to_owned(),
    }
}

/// The `<iframe>` that shows the page at `src` inside another page.
pub fn embed_snippet(src: &str, title: &str) -> String {
    let title = title.replace('"', "'");
    format!(
        "<iframe src=\"{src}\" title=\"{title}\" width=\"100%\" height=\"520\" \
         style=\"border: 1px solid #d8dde5; border-radius: 6px\" loading=\"lazy\"></iframe>"
    )
}

/// The address of an entry embedded: the library scenario, as it ships.
pub fn embed_url(base_url: &str, entry: &str) -> String {
    format!("{base_url}?scenario={entry}&embed=1")
}

#[cfg(target_arch = "wasm32")]
pub use view::museum;

#[cfg(target_arch = "wasm32")]
mod view {
    use yew::prelude::*;

    use super::{Entry, embed_snippet, embed_url, issue_label};
    use crate::app::page::{App, Msg, base_url};

    /// The fix checkbox of a card: its id says the entry and the fix.
    fn fix_id(entry: &str, fix: &str) -> String {
        format!("museum-fix-{entry}-{fix}")
    }

    /// Whether the checkbox with this id is ticked.
    fn ticked(id: &str) -> bool {
        crate::app::panels::input_by_id(id).is_some_and(|i| i.checked())
    }

    /// The museum page: a card per entry.
    pub fn museum(entries: &[Entry], ctx: &Context<App>) -> Html {
        html! {
            <section class="museum" id="museum" aria-labelledby="museum-title">
                <h2 id="museum-title">
                    { "The museum of real staleness bugs" }
                    <button type="button" id="museum-close" onclick={ctx.link().callback(|_| Msg::ToggleMuseum)}>
                        { "Back to the playground" }
                    </button>
                </h2>
                <p class="hint">
                    { "Each entry reproduces a bug from a public issue tracker with the controller involved. \
                       Open it to see the run and the explanation of what broke; tick a fix first to see the \
                       bug go (the scenario panel has the same switches)." }
                </p>
                <ul class="museum-entries">
                    { for entries.iter().map(|entry| card(entry, ctx)) }
                </ul>
            </section>
        }
    }

    fn card(entry: &Entry, ctx: &Context<App>) -> Html {
        let open = {
            let name = entry.name.clone();
            let fixes: Vec<String> = entry.fixes.iter().map(|(fix, _)| fix.clone()).collect();
            ctx.link().callback(move |_| {
                let on = fixes.iter().filter(|fix| ticked(&fix_id(&name, fix))).cloned().collect();
                Msg::OpenEntry { name: name.clone(), fixes: on }
            })
        };
        let breaks: Vec<String> = entry.expected.iter().map(|c| c.to_string()).collect();
        let snippet = embed_snippet(&embed_url(&base_url(), &entry.name), &format!("Recon: {}", entry.name));
        html! {
            <li class="museum-entry" id={format!("museum-{}", entry.name)}>
                <h3>{ &entry.name }</h3>
                <p class="lesson">{ &entry.lesson }</p>
                <p class="source">
                    { "From " }
                    <a href={entry.source.clone()} target="_blank" rel="noopener">{ issue_label(&entry.source) }</a>
                    { format!(" · breaks {}", breaks.join(", ")) }
                </p>
                if !entry.fixes.is_empty() {
                    <fieldset class="fixes">
                        <legend>{ "Upstream fixes" }</legend>
                        { for entry.fixes.iter().map(|(fix, summary)| html! {
                            <label class="fix" title={summary.clone()}>
                                <input type="checkbox" id={fix_id(&entry.name, fix)} />
                                { " " }<strong>{ fix }</strong>{ ": " }{ summary }
                            </label>
                        }) }
                    </fieldset>
                }
                <button type="button" class="museum-open" id={format!("museum-open-{}", entry.name)} onclick={open}>
                    { "Open, run and explain" }
                </button>
                <details class="museum-embed">
                    <summary>{ "Embed it" }</summary>
                    <textarea readonly=true rows="3" aria-label={format!("Embed snippet for {}", entry.name)}
                        value={snippet} />
                </details>
            </li>
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_a_lesson_and_the_bug_it_shows() {
        let entries = entries();
        assert!(entries.len() >= 4, "#59848, #129795, #648 and #775 at least: {entries:?}");
        for entry in &entries {
            assert!(!entry.lesson.is_empty(), "{}: a card says its lesson", entry.name);
            assert!(!entry.expected.is_empty(), "{}: an entry shows a bug", entry.name);
            assert!(!entry.fixes.is_empty(), "{}: and the fixes upstream made", entry.name);
        }
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"pod-safety-59848"), "{names:?}");
        assert!(names.contains(&"hdfs-partial-relist-774"), "every library entry is a card: {names:?}");
        assert!(!names.contains(&"pod-safety-59848-quorum"), "a fixed variant is not an entry of its own: {names:?}");
    }

    #[test]
    fn github_links_read_as_people_write_them() {
        assert_eq!(issue_label("https://github.com/kubernetes/kubernetes/issues/59848"), "kubernetes/kubernetes#59848");
        assert_eq!(
            issue_label("https://github.com/rabbitmq/cluster-operator/pull/651"),
            "rabbitmq/cluster-operator#651"
        );
        assert_eq!(issue_label("https://kubernetes.io/docs/x"), "https://kubernetes.io/docs/x");
    }

    #[test]
    fn an_entry_embeds_as_the_library_scenario() {
        let snippet = embed_snippet(&embed_url("https://example.org/recon/", "gc-stale-view"), "Recon: \"x\"");
        assert!(snippet.contains("src=\"https://example.org/recon/?scenario=gc-stale-view&embed=1\""), "{snippet}");
        assert!(snippet.contains("title=\"Recon: 'x'\""), "{snippet}");
    }
}
