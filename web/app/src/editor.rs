//! The scenario editor: the scenario's YAML as text, checked as you type.
//!
//! This module owns the editor panel of the playground: a monospace
//! textarea with a line-number gutter, the list of problems in the text, a
//! one-line status, and the Apply and Revert buttons. It does not own the
//! scenario: its parent passes the text in ([`EditorProps::text`]) and is
//! told when the user applies an edit ([`EditorProps::on_apply`]). Edits not
//! yet applied live here, and are discarded only when the parent passes a
//! different text (a library scenario was picked) or the user reverts.
//!
//! Errors: every input event parses the text with
//! [`recon_scenario::parse_with_source`] (well under a millisecond for the
//! library's scenarios). The [`Diagnostic`]s it returns are listed one per
//! line as `line L, column C: message`, in file order, right under the text;
//! each is a button (Tab from the text reaches the first), and pressing it
//! (click, Enter or Space) puts the caret there. Lines with a problem are marked in the gutter. Apply (and
//! Ctrl+Enter in the textarea) is enabled only while the text parses. The
//! simulator may still reject a parsed scenario (an unknown controller); it
//! reports that through the parent, like any other run failure.
//!
//! Plain Rust, tested natively (`cargo test -p recon-web --lib editor`):
//! [`Check`] (parse and summarise), [`describe`] (a problem's words),
//! [`byte_offset`] and [`utf16_offset`] (where a line and column are in a
//! text) and [`normalize_newlines`].
//!
//! Hooks for browser tests: the root `#editor` carries `data-valid`
//! (`true`/`false`) and `data-dirty` (whether the text differs from the
//! prop's); the textarea is `#editor-text`; the problems are `li`s of
//! `#editor-errors`, each with `data-line` and `data-column` and a
//! `button.editor-problem` inside; the status is
//! `#editor-status`; the buttons are `#editor-apply` and `#editor-revert`.

use std::collections::BTreeSet;

use recon_scenario::Diagnostic;
use web_sys::{HtmlElement, HtmlTextAreaElement, KeyboardEvent};
use yew::prelude::*;

/// The file name given to the parser; it appears in no message the editor shows.
pub const FILE_NAME: &str = "scenario.yaml";

/// Height of one text line in CSS pixels; `web/style.css` uses the same
/// value for the textarea and the gutter, so that their lines align.
pub const LINE_HEIGHT_PX: i32 = 18;

/// What the parser makes of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// The text is a runnable scenario file.
    Valid {
        /// How many components it defines.
        components: usize,
        /// How many script steps it has.
        steps: usize,
    },
    /// The text has problems, in file order; never empty.
    Invalid(Vec<Diagnostic>),
}

impl Check {
    /// Parses `text` as the scenario file [`FILE_NAME`].
    pub fn of(text: &str) -> Check {
        match recon_scenario::parse_with_source(FILE_NAME, text) {
            Ok((scenario, _)) => Check::Valid { components: scenario.components.len(), steps: scenario.script.len() },
            Err(error) => Check::Invalid(error.diagnostics),
        }
    }

    /// Whether the text parses.
    pub fn is_valid(&self) -> bool {
        matches!(self, Check::Valid { .. })
    }

    /// The problems found; empty when the text parses.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Check::Valid { .. } => &[],
            Check::Invalid(diagnostics) => diagnostics,
        }
    }

    /// The status line: `valid: 5 components, 9 steps` or `3 problems`
    /// (singular for one).
    pub fn summary(&self) -> String {
        match self {
            Check::Valid { components, steps } => {
                format!("valid: {}, {}", plural(*components, "component"), plural(*steps, "step"))
            }
            Check::Invalid(diagnostics) => plural(diagnostics.len(), "problem"),
        }
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The problems in `text` as `(line, column, message)`, in file order; lines
/// and columns are 1-based, columns in characters.
pub fn diagnostics(text: &str) -> Vec<(usize, usize, String)> {
    Check::of(text).diagnostics().iter().map(|d| (d.line, d.column, d.message.clone())).collect()
}

/// A problem as the editor lists it: `line L, column C: message`.
pub fn describe(diagnostic: &Diagnostic) -> String {
    format!("line {}, column {}: {}", diagnostic.line, diagnostic.column, diagnostic.message)
}

/// The byte offset in `text` of 1-based `line` and `column`, counting
/// columns in characters as the scenario parser does.
///
/// Lines end at `\n` (a `\r` before it is not part of the line). A column
/// past the end of its line gives the line's end; a line past the end of the
/// text gives the text's end; 0 counts as 1.
pub fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(newline) => start += newline + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    let line_text = rest.split('\n').next().unwrap_or_default();
    let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
    let within = line_text.char_indices().nth(column.max(1) - 1).map_or(line_text.len(), |(at, _)| at);
    start + within
}

/// The offset of `line` and `column` (as in [`byte_offset`]) in UTF-16 code
/// units: what a textarea's `selectionStart` counts.
pub fn utf16_offset(text: &str, line: usize, column: usize) -> u32 {
    let units = text[..byte_offset(text, line, column)].encode_utf16().count();
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// `text` with `\r\n` and lone `\r` turned into `\n`, as a textarea's value
/// has them, so that the editor's copy of its text matches the element's.
pub fn normalize_newlines(text: &str) -> String {
    if text.contains('\r') { text.replace("\r\n", "\n").replace('\r', "\n") } else { text.to_owned() }
}

/// What the editor shows and whom it tells about an applied edit.
#[derive(Properties, PartialEq)]
pub struct EditorProps {
    /// The scenario file to show. When it changes, the editor shows the new
    /// text and drops any unapplied edits; when the parent re-renders with
    /// the same text, edits are kept.
    pub text: AttrValue,
    /// Called with the edited text when the user applies it (the Apply
    /// button or Ctrl+Enter); only ever with a text that parses.
    pub on_apply: Callback<String>,
}

/// The editor's messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// The user edited the text; this is the textarea's new value.
    Input(String),
    /// Apply the text, if it parses.
    Apply,
    /// Go back to the prop's text.
    Revert,
    /// Put the caret at a 1-based line and column (in characters).
    Goto {
        /// Line.
        line: usize,
        /// Column.
        column: usize,
    },
    /// The textarea scrolled: keep the gutter beside its lines.
    Scroll,
}

/// Where the message beside line `line` (1-based) sits in the text's box
/// before scrolling: level with the line (the text has a 6 px top padding).
fn inline_top(line: usize) -> i32 {
    6 + i32::try_from(line.saturating_sub(1)).unwrap_or(i32::MAX / 2).saturating_mul(LINE_HEIGHT_PX)
}

/// The scenario editor component (see the [module docs](self)).
pub struct ScenarioEditor {
    /// The prop's text, newlines normalised.
    base: String,
    /// The text in the textarea.
    text: String,
    /// What the parser makes of `text`.
    check: Check,
    textarea: NodeRef,
    gutter: NodeRef,
    /// The first problem's message, drawn beside its line.
    inline: NodeRef,
}

impl ScenarioEditor {
    fn reset(&mut self, text: &str) {
        self.base = normalize_newlines(text);
        self.text = self.base.clone();
        self.check = Check::of(&self.text);
    }

    fn sync_gutter(&self) {
        let Some(textarea) = self.textarea.cast::<HtmlElement>() else { return };
        if let Some(gutter) = self.gutter.cast::<HtmlElement>() {
            gutter.set_scroll_top(textarea.scroll_top());
        }
        // The message beside its line follows the line as the text scrolls.
        if let (Some(inline), Some(d)) = (self.inline.cast::<HtmlElement>(), self.check.diagnostics().first()) {
            let top = inline_top(d.line) - textarea.scroll_top();
            let _ = inline.set_attribute("style", &format!("top:{top}px"));
        }
    }

    fn goto(&self, line: usize, column: usize) {
        let Some(textarea) = self.textarea.cast::<HtmlTextAreaElement>() else { return };
        // The element's own value, in case it differs from ours.
        let offset = utf16_offset(&textarea.value(), line, column);
        let _ = textarea.focus();
        let _ = textarea.set_selection_range(offset, offset);
        // Put the line in the middle of the view; browsers do not always
        // scroll to a caret set by script.
        let line_top = i32::try_from(line.saturating_sub(1)).unwrap_or(i32::MAX / 2).saturating_mul(LINE_HEIGHT_PX);
        textarea.set_scroll_top((line_top - textarea.client_height() / 2).max(0));
        self.sync_gutter();
    }

    /// The first problem's message, beside the line it is about (in the
    /// text's own box, so it needs no scrolling to be seen when the line
    /// is); placed after each render by [`Self::sync_gutter`].
    fn inline_view(&self) -> Html {
        let Some(d) = self.check.diagnostics().first() else { return html! {} };
        html! {
            <div id="editor-inline-error" class="editor-inline-error" ref={self.inline.clone()}
                data-line={d.line.to_string()} aria-hidden="true">
                { format!("line {}: {}", d.line, describe(d)) }
            </div>
        }
    }

    fn gutter_view(&self) -> Html {
        let bad: BTreeSet<usize> = self.check.diagnostics().iter().map(|d| d.line).collect();
        let lines = self.text.split('\n').count();
        let numbers = (1..=lines).map(|n| {
            let class = if bad.contains(&n) { "bad" } else { "" };
            html! { <div {class}>{ n }</div> }
        });
        html! {
            <div class="editor-gutter" ref={self.gutter.clone()} aria-hidden="true">{ for numbers }</div>
        }
    }
}

impl Component for ScenarioEditor {
    type Message = Msg;
    type Properties = EditorProps;

    fn create(ctx: &Context<Self>) -> Self {
        let mut editor = ScenarioEditor {
            base: String::new(),
            text: String::new(),
            check: Check::Valid { components: 0, steps: 0 },
            textarea: NodeRef::default(),
            gutter: NodeRef::default(),
            inline: NodeRef::default(),
        };
        editor.reset(&ctx.props().text);
        editor
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &EditorProps) -> bool {
        if ctx.props().text != old.text {
            self.reset(&ctx.props().text);
            return true;
        }
        false
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        match msg {
            Msg::Input(text) => {
                self.check = Check::of(&text);
                self.text = text;
                true
            }
            Msg::Apply => {
                if self.check.is_valid() {
                    ctx.props().on_apply.emit(self.text.clone());
                }
                false
            }
            Msg::Revert => {
                if self.text == self.base {
                    return false;
                }
                self.text = self.base.clone();
                self.check = Check::of(&self.text);
                true
            }
            Msg::Goto { line, column } => {
                self.goto(line, column);
                false
            }
            Msg::Scroll => {
                self.sync_gutter();
                false
            }
        }
    }

    fn rendered(&mut self, _ctx: &Context<Self>, _first_render: bool) {
        self.sync_gutter();
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let valid = self.check.is_valid();
        let dirty = self.text != self.base;
        let oninput = link
            .batch_callback(|e: InputEvent| e.target_dyn_into::<HtmlTextAreaElement>().map(|t| Msg::Input(t.value())));
        let onkeydown = link.batch_callback(|e: KeyboardEvent| {
            ((e.ctrl_key() || e.meta_key()) && e.key() == "Enter").then(|| {
                e.prevent_default();
                Msg::Apply
            })
        });
        let onscroll = link.callback(|_: Event| Msg::Scroll);
        // Buttons, so that Tab reaches them and Enter or Space jumps there.
        let problems = self.check.diagnostics().iter().map(|d| {
            let (line, column) = (d.line, d.column);
            let onclick = link.callback(move |_: MouseEvent| Msg::Goto { line, column });
            html! {
                <li data-line={line.to_string()} data-column={column.to_string()}>
                    <button type="button" class="editor-problem" title={format!("Put the caret at {} ({})", d.path, describe(d))}
                        {onclick}>{ describe(d) }</button>
                </li>
            }
        });
        let status_class = if valid { "editor-status ok" } else { "editor-status bad" };
        html! {
            <div id="editor" class="editor" data-valid={valid.to_string()} data-dirty={dirty.to_string()}>
                <label class="editor-label" for="editor-text">
                    { "Scenario file (YAML)" }
                </label>
                <div class="editor-bar">
                    <button id="editor-apply" type="button" disabled={!valid} onclick={link.callback(|_| Msg::Apply)}
                        aria-keyshortcuts="Control+Enter" title="Run this scenario (Ctrl+Enter)">{ "Apply" }</button>
                    <button id="editor-revert" type="button" disabled={!dirty} onclick={link.callback(|_| Msg::Revert)}
                        title="Discard the edits">{ "Revert" }</button>
                    <span id="editor-status" class={status_class} role="status">{ self.check.summary() }</span>
                </div>
                <div class="editor-area">
                    { self.gutter_view() }
                    { self.inline_view() }
                    <textarea
                        id="editor-text"
                        ref={self.textarea.clone()}
                        spellcheck="false"
                        autocomplete="off"
                        wrap="off"
                        aria-describedby="editor-status"
                        value={self.text.clone()}
                        {oninput}
                        {onkeydown}
                        {onscroll}
                    />
                </div>
                // After the text and before the buttons, so that Tab goes from the text to its problems.
                <ul id="editor-errors" class="editor-errors" aria-label="Problems in the scenario file">
                    { for problems }
                </ul>
            </div>
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_yaml() -> &'static str {
        recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap().yaml
    }

    /// The 1-based line of the first line of `text` containing `needle`.
    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
    }

    #[test]
    fn the_default_scenario_has_no_problems() {
        assert_eq!(diagnostics(default_yaml()), vec![]);
        let check = Check::of(default_yaml());
        assert!(check.is_valid());
        assert!(check.summary().starts_with("valid: "), "{}", check.summary());
    }

    #[test]
    fn the_summary_counts_components_and_steps() {
        let text =
            "name: x\napiServers: [{name: a}]\ncomponents:\n  - {name: s, controller: scheduler, apiServer: a}\n";
        assert_eq!(Check::of(text), Check::Valid { components: 1, steps: 0 });
        assert_eq!(Check::of(text).summary(), "valid: 1 component, 0 steps");
        assert_eq!(Check::of("name: x\n").summary(), "1 problem");
    }

    #[test]
    fn a_misspelled_field_is_reported_at_its_line() {
        let text = default_yaml().replacen("    apiServer: apiserver-1", "    apiServr: apiserver-1", 1);
        let line = line_of(&text, "apiServr");
        let found = diagnostics(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (line, 5));
        assert!(found[0].2.contains("apiServr"), "{}", found[0].2);
        assert!(!Check::of(&text).is_valid());
    }

    #[test]
    fn a_yaml_syntax_error_has_its_line_and_column() {
        let found = diagnostics("name: x\nseed: : 3\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (2, 7), "{found:?}");
        assert!(found[0].2.contains("mapping values are not allowed"), "{found:?}");
        // A key indented one column too far inside a block sequence.
        let found = diagnostics("name: x\napiServers:\n  - name: a\n   bad: [\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (4, 4), "{found:?}");
    }

    #[test]
    fn an_unknown_api_server_is_reported_at_the_field() {
        let text = default_yaml().replacen(
            "controller: statefulset\n    apiServer: apiserver-1",
            "controller: statefulset\n    apiServer: apiserver-9",
            1,
        );
        assert_ne!(text, default_yaml());
        let line = line_of(&text, "apiserver-9");
        let found = diagnostics(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (line, 16));
        assert!(found[0].2.contains("apiserver-9"), "{}", found[0].2);
    }

    #[test]
    fn columns_count_characters_as_the_parser_does() {
        // An unknown key after non-ASCII text on its line.
        let text = "# café ☕ 🚀\nname: x\nnodes: [{name: \"nœud-🚀\", podz: 3}]\napiServers: [{name: a}]\n";
        let found = diagnostics(text);
        assert_eq!(found.len(), 1, "{found:?}");
        let (line, column, _) = found[0];
        // In bytes `podz` would be at column 30.
        assert_eq!((line, column), (3, 26));
        assert_eq!(&text[byte_offset(text, line, column)..][..4], "podz");
    }

    #[test]
    fn offsets_count_characters_and_utf16_units() {
        let text = "# café ☕ 🚀\nname: x\r\nend";
        assert_eq!(byte_offset(text, 1, 1), 0);
        // `é` is 2 bytes, `☕` 3, `🚀` 4 (and 2 UTF-16 units).
        assert_eq!(byte_offset(text, 1, 6), 5);
        assert_eq!(&text[byte_offset(text, 1, 7)..][..1], " ");
        assert_eq!(&text[byte_offset(text, 1, 10)..][..4], "🚀");
        assert_eq!(utf16_offset(text, 1, 10), 9);
        // Past the end of the line: its end; the comment line is 10 characters, 11 UTF-16 units.
        assert_eq!(byte_offset(text, 1, 99), "# café ☕ 🚀".len());
        assert_eq!(utf16_offset(text, 1, 99), 11);
        // The next lines start after the newline; `\r` is not part of a line.
        assert_eq!(utf16_offset(text, 2, 1), 12);
        assert_eq!(&text[byte_offset(text, 2, 7)..], "x\r\nend");
        assert_eq!(byte_offset(text, 2, 99), text.find('\r').unwrap());
        assert_eq!(&text[byte_offset(text, 3, 2)..], "nd");
        // Past the end of the text, and zeros.
        assert_eq!(byte_offset(text, 9, 1), text.len());
        assert_eq!(byte_offset(text, 0, 0), 0);
        assert_eq!(byte_offset("", 1, 1), 0);
        assert_eq!(byte_offset("a\n", 2, 1), 2);
    }

    #[test]
    fn newlines_are_normalised_as_a_textarea_does() {
        assert_eq!(normalize_newlines("a\r\nb\rc\n"), "a\nb\nc\n");
        assert_eq!(normalize_newlines(default_yaml()), default_yaml());
    }

    #[test]
    fn problems_are_described_by_line_and_column() {
        let d = Diagnostic { line: 4, column: 9, path: "seed".into(), message: "expected a number".into() };
        assert_eq!(describe(&d), "line 4, column 9: expected a number");
    }
}
