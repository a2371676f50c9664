//! Keybindings are data: this table drives both key handling and the generated `?` help screen.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Command;

/// Where a binding applies: the screen shown, or the modal on top of it (which takes the keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Both screens (the tables list and the table view).
    Global,
    Tables,
    Table,
    /// The plan preview or the cancel confirmation.
    Dialog,
    /// Typing a filter: letters are text.
    Filter,
    /// Typing the order in a compaction preview: letters are text.
    OrderInput,
    Error,
    /// The help screen: j/k scroll it, any other key closes it.
    Help,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Tables => "Tables list",
            Context::Table => "Table view",
            Context::Dialog => "Dialogs",
            Context::Filter => "Filter input",
            Context::OrderInput => "Order input (compaction preview)",
            Context::Error => "Error",
            Context::Help => "Help",
        }
    }

    /// Contexts in the order the help screen and the README list them.
    pub const ALL: [Context; 8] = [
        Context::Global,
        Context::Tables,
        Context::Table,
        Context::Dialog,
        Context::Filter,
        Context::OrderInput,
        Context::Error,
        Context::Help,
    ];

    /// Letters are text here (only the Ctrl keys of the shared bindings apply).
    pub fn is_text_input(self) -> bool {
        matches!(self, Context::Filter | Context::OrderInput)
    }

    /// What the hint bar says before the keys (for contexts where not every key is bound).
    fn hint_prefix(self) -> Option<&'static str> {
        match self {
            Context::Filter => Some("type to filter"),
            Context::OrderInput => {
                Some("type zorder a,b · sort a · binpack · empty: the table's default")
            }
            Context::Help => Some("other keys close this help"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn k(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

impl Key {
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Backspace => "Backspace".into(),
            KeyCode::Tab => "Tab".into(),
            other => format!("{other:?}"),
        };
        if self.mods.contains(KeyModifiers::CONTROL) {
            format!("Ctrl-{base}")
        } else {
            base
        }
    }

    fn matches(&self, ev: &KeyEvent) -> bool {
        // Shift is implied by the character itself ('G', '?'), so it is not compared.
        let mods = ev.modifiers - KeyModifiers::SHIFT;
        self.code == ev.code && self.mods == mods
    }
}

pub struct Binding {
    pub keys: &'static [Key],
    pub command: Command,
    pub context: Context,
    pub help: &'static str,
    /// The word the hint bar shows after the first key (None: not in the bar). Consecutive
    /// bindings with the same hint share one entry ("j/k move").
    pub hint: Option<&'static str>,
}

use Command as C;
use Context::{Dialog as D, Error as E, Filter as F, Global as G, Table as T, Tables as L};

const fn bind(
    keys: &'static [Key],
    command: Command,
    context: Context,
    help: &'static str,
    hint: Option<&'static str>,
) -> Binding {
    Binding {
        keys,
        command,
        context,
        help,
        hint,
    }
}

pub static BINDINGS: &[Binding] = &[
    bind(
        &[k(KeyCode::Char('j')), k(KeyCode::Down)],
        C::Down,
        G,
        "move down",
        Some("move"),
    ),
    bind(
        &[k(KeyCode::Char('k')), k(KeyCode::Up)],
        C::Up,
        G,
        "move up",
        Some("move"),
    ),
    bind(
        &[ctrl('u'), k(KeyCode::PageUp)],
        C::PageUp,
        G,
        "page up",
        None,
    ),
    bind(
        &[ctrl('d'), k(KeyCode::PageDown)],
        C::PageDown,
        G,
        "page down",
        None,
    ),
    bind(
        &[k(KeyCode::Char('g')), k(KeyCode::Home)],
        C::Top,
        G,
        "first row",
        None,
    ),
    bind(
        &[k(KeyCode::Char('G')), k(KeyCode::End)],
        C::Bottom,
        G,
        "last row",
        None,
    ),
    bind(
        &[k(KeyCode::Char('s'))],
        C::CycleSort,
        G,
        "sort by next column (excess, small share, bytes, files, name, health; the janitor's too while it runs)",
        Some("sort"),
    ),
    bind(
        &[k(KeyCode::Char('S'))],
        C::ReverseSort,
        G,
        "reverse the sort order",
        None,
    ),
    bind(
        &[k(KeyCode::Char('/'))],
        C::Filter,
        G,
        "filter rows by name",
        Some("filter"),
    ),
    bind(
        &[k(KeyCode::Char('r'))],
        C::Refresh,
        G,
        "reload from the log",
        Some("reload"),
    ),
    bind(
        &[
            k(KeyCode::Esc),
            k(KeyCode::Backspace),
            k(KeyCode::Char('h')),
            k(KeyCode::Left),
        ],
        C::Back,
        G,
        "clear the filter, else back to the tables list",
        Some("back"),
    ),
    bind(
        &[k(KeyCode::Char('?'))],
        C::Help,
        G,
        "show this help",
        Some("help"),
    ),
    bind(
        &[k(KeyCode::Char('q')), ctrl('c')],
        C::Quit,
        G,
        "quit (in dialogs too; Ctrl-c while typing a filter); asks first while a job runs",
        Some("quit"),
    ),
    bind(
        &[k(KeyCode::Enter), k(KeyCode::Char('l')), k(KeyCode::Right)],
        C::Enter,
        L,
        "open the selected table",
        Some("open"),
    ),
    bind(
        &[k(KeyCode::Char('a'))],
        C::Fleet,
        L,
        "janitor on / off for every table under the root (state, debt, last job, spend per row)",
        Some("janitor"),
    ),
    bind(
        &[k(KeyCode::Char(' '))],
        C::ToggleMark,
        T,
        "mark / unmark the partition for compaction, then move to the next",
        Some("mark"),
    ),
    bind(
        &[k(KeyCode::Char('c'))],
        C::Compact,
        T,
        "preview a compaction of the marked (or selected) partitions",
        Some("compact"),
    ),
    bind(
        &[k(KeyCode::Char('P'))],
        C::Purge,
        T,
        "purge deleted rows: preview rewriting the files with deletion vectors",
        Some("purge"),
    ),
    bind(
        &[k(KeyCode::Char('x'))],
        C::CancelJob,
        T,
        "cancel the running compaction job (asks first)",
        Some("cancel job"),
    ),
    bind(
        &[k(KeyCode::Char('f'))],
        C::FullSpeed,
        T,
        "lift the pace of the running jobs a writer holds back: reads unbounded, commits as bins finish",
        Some("lift pace"),
    ),
    bind(
        &[k(KeyCode::Char('C'))],
        C::Convert,
        T,
        "preview converting a Parquet folder (or Spark sink) to Delta in place",
        Some("convert"),
    ),
    bind(
        &[k(KeyCode::Char('t'))],
        C::ToggleTableHistogram,
        T,
        "histogram of the whole table / of the selected partition",
        Some("histogram"),
    ),
    bind(
        &[k(KeyCode::Char('d'))],
        C::Skipping,
        T,
        "skipping: how many files a lookup of one value opens, per column (overlap depth)",
        None,
    ),
    bind(
        &[k(KeyCode::Char('K'))],
        C::Checkpoint,
        T,
        "write a checkpoint of the table's current version",
        None,
    ),
    bind(
        &[k(KeyCode::Char('V'))],
        C::Vacuum,
        T,
        "VACUUM: preview what it deletes (dry run), then confirm",
        None,
    ),
    bind(
        &[k(KeyCode::Char('a'))],
        C::Janitor,
        T,
        "janitor on / off for this table (policy on screen, jobs in the panel)",
        Some("janitor"),
    ),
    bind(
        &[k(KeyCode::Char('w'))],
        C::Why,
        T,
        "why: the janitor's last decisions (rule, decision, reason, time)",
        Some("why"),
    ),
    bind(
        &[k(KeyCode::Enter), k(KeyCode::Char('y'))],
        C::Confirm,
        D,
        "confirm: start the job / cancel the job",
        Some("confirm"),
    ),
    bind(
        &[k(KeyCode::Esc), k(KeyCode::Char('n'))],
        C::Dismiss,
        D,
        "close the dialog without doing anything",
        Some("close"),
    ),
    bind(
        &[k(KeyCode::Char('f'))],
        C::FullSpeed,
        D,
        "compaction preview: start at full speed, whatever the writers do (again: follow them)",
        Some("full speed"),
    ),
    bind(
        &[k(KeyCode::Char('o'))],
        C::Order,
        D,
        "compaction preview: type the order of the rows (zorder, sort, binpack)",
        Some("order"),
    ),
    bind(
        &[k(KeyCode::Char('j')), k(KeyCode::Down)],
        C::Down,
        D,
        "scroll down (the why view)",
        Some("scroll"),
    ),
    bind(
        &[k(KeyCode::Char('k')), k(KeyCode::Up)],
        C::Up,
        D,
        "scroll up (the why view)",
        Some("scroll"),
    ),
    bind(
        &[ctrl('d'), k(KeyCode::PageDown)],
        C::PageDown,
        D,
        "scroll a page down (the why view)",
        None,
    ),
    bind(
        &[ctrl('u'), k(KeyCode::PageUp)],
        C::PageUp,
        D,
        "scroll a page up (the why view)",
        None,
    ),
    bind(
        &[k(KeyCode::Enter)],
        C::Confirm,
        F,
        "keep the filter",
        Some("keep"),
    ),
    bind(
        &[k(KeyCode::Esc)],
        C::Dismiss,
        F,
        "clear the filter",
        Some("clear"),
    ),
    bind(
        &[k(KeyCode::Backspace)],
        C::Erase,
        F,
        "delete the last character",
        None,
    ),
    bind(
        &[k(KeyCode::Enter)],
        C::Confirm,
        Context::OrderInput,
        "plan the compaction again in this order",
        Some("plan"),
    ),
    bind(
        &[k(KeyCode::Esc)],
        C::Dismiss,
        Context::OrderInput,
        "keep the order planned",
        Some("keep"),
    ),
    bind(
        &[k(KeyCode::Backspace)],
        C::Erase,
        Context::OrderInput,
        "delete the last character",
        None,
    ),
    bind(
        &[k(KeyCode::Char('j')), k(KeyCode::Down)],
        C::Down,
        Context::Help,
        "scroll the help down",
        Some("scroll"),
    ),
    bind(
        &[k(KeyCode::Char('k')), k(KeyCode::Up)],
        C::Up,
        Context::Help,
        "scroll the help up",
        Some("scroll"),
    ),
    bind(
        &[k(KeyCode::Esc), k(KeyCode::Enter)],
        C::Dismiss,
        E,
        "close the error",
        Some("dismiss"),
    ),
    bind(
        &[k(KeyCode::Char('r'))],
        C::Refresh,
        E,
        "close the error and reload",
        Some("retry"),
    ),
];

/// What the mouse does (data like the keys: the help screen and the README list it). Handled in
/// `App::update` (`Action::Mouse`); the terminal captures the mouse while the TUI runs.
pub static MOUSE: &[(&str, &str)] = &[
    (
        "click",
        "select the row under it; clicking the selected table opens it",
    ),
    (
        "wheel",
        "move the selection of the list under it; scroll the help and why views",
    ),
];

/// The bindings that apply in `ctx`, in the order they are looked up and shown: the context's
/// own, then the screens' shared ones; a modal adds only quitting to its own.
fn in_context(ctx: Context) -> impl Iterator<Item = &'static Binding> {
    let own = BINDINGS.iter().filter(move |b| b.context == ctx);
    let shared = BINDINGS.iter().filter(move |b| match ctx {
        Context::Tables | Context::Table => b.context == Context::Global,
        Context::Global => false,
        Context::Dialog
        | Context::Filter
        | Context::OrderInput
        | Context::Error
        | Context::Help => b.context == Context::Global && b.command == Command::Quit,
    });
    own.chain(shared)
}

/// The keys of `b` that work in `ctx`: while typing (a filter, an order) a plain letter is
/// text, so of the shared bindings only the Ctrl keys apply.
fn keys_in(b: &'static Binding, ctx: Context) -> impl Iterator<Item = &'static Key> {
    b.keys.iter().filter(move |key| {
        !ctx.is_text_input() || b.context == ctx || key.mods.contains(KeyModifiers::CONTROL)
    })
}

/// The command bound to `ev` in `ctx`.
pub fn command_for(ev: &KeyEvent, ctx: Context) -> Option<Command> {
    let bound = in_context(ctx)
        .find(|b| keys_in(b, ctx).any(|key| key.matches(ev)))
        .map(|b| b.command);
    match (bound, ctx) {
        // "Other keys close this help": every key that neither scrolls nor quits.
        (None, Context::Help) => Some(Command::Dismiss),
        (c, _) => c,
    }
}

/// The hint bar of `ctx`: its bound keys with a hint, for the commands `available` allows, e.g.
/// "Space mark · c compact · j/k move · q quit".
pub fn hint_line(ctx: Context, available: impl Fn(Command) -> bool) -> String {
    let mut entries: Vec<(Vec<String>, &'static str)> = Vec::new();
    for b in in_context(ctx).filter(|b| available(b.command)) {
        let (Some(hint), Some(key)) = (b.hint, keys_in(b, ctx).next()) else {
            continue;
        };
        match entries.last_mut() {
            Some((keys, h)) if *h == hint => keys.push(key.label()),
            _ => entries.push((vec![key.label()], hint)),
        }
    }
    ctx.hint_prefix()
        .into_iter()
        .map(str::to_string)
        .chain(
            entries
                .into_iter()
                .map(|(keys, hint)| format!("{} {hint}", keys.join("/"))),
        )
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Help lines grouped by context: (context title, [(keys, help)]); contexts without bindings of
/// their own are left out.
pub fn help_sections() -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    Context::ALL
        .into_iter()
        .map(|ctx| {
            let rows: Vec<(String, &'static str)> = BINDINGS
                .iter()
                .filter(|b| b.context == ctx)
                .map(|b| {
                    let keys: Vec<String> = b.keys.iter().map(Key::label).collect();
                    (keys.join(" / "), b.help)
                })
                .collect();
            (ctx.title(), rows)
        })
        .filter(|(_, rows)| !rows.is_empty())
        .chain(std::iter::once((
            "Mouse",
            MOUSE.iter().map(|(k, h)| (k.to_string(), *h)).collect(),
        )))
        .collect()
}

/// The key table of the README (kept in sync by a test), from the same data as `?`.
pub fn markdown_table() -> String {
    let mut out = String::from("| keys | where | does |\n|---|---|---|\n");
    for (title, rows) in help_sections() {
        for (keys, help) in rows {
            let keys = keys
                .split(" / ")
                .map(|k| format!("`{}`", k.replace('|', "\\|")))
                .collect::<Vec<_>>()
                .join(" / ");
            out.push_str(&format!("| {keys} | {} | {help} |\n", title.to_lowercase()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_key_table_is_generated_from_the_keymap() {
        let readme = include_str!("../../README.md");
        let (start, end) = ("<!-- keys:start -->\n", "<!-- keys:end -->");
        let from = readme.find(start).map(|i| i + start.len());
        let to = readme.find(end);
        let (Some(from), Some(to)) = (from, to) else {
            panic!("README.md lacks the key table markers");
        };
        let expected = markdown_table();
        assert_eq!(
            &readme[from..to],
            expected,
            "update README.md's key table to:\n{expected}"
        );
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn vim_and_arrow_keys_both_work() {
        assert_eq!(
            command_for(&key(KeyCode::Char('j')), Context::Table),
            Some(Command::Down)
        );
        assert_eq!(
            command_for(&key(KeyCode::Down), Context::Table),
            Some(Command::Down)
        );
        assert_eq!(
            command_for(&key(KeyCode::Char('k')), Context::Tables),
            Some(Command::Up)
        );
        assert_eq!(
            command_for(&key(KeyCode::Up), Context::Tables),
            Some(Command::Up)
        );
        assert_eq!(
            command_for(
                &KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT),
                Context::Table
            ),
            Some(Command::Bottom)
        );
        assert_eq!(
            command_for(
                &KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                Context::Table
            ),
            Some(Command::Quit)
        );
    }

    #[test]
    fn context_bindings_apply_only_in_their_context() {
        assert_eq!(
            command_for(&key(KeyCode::Enter), Context::Tables),
            Some(Command::Enter)
        );
        assert_eq!(command_for(&key(KeyCode::Enter), Context::Table), None);
        assert_eq!(
            command_for(&key(KeyCode::Esc), Context::Table),
            Some(Command::Back)
        );
    }

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        for ctx in Context::ALL {
            let mut seen = Vec::new();
            for b in in_context(ctx) {
                for key in b.keys {
                    assert!(
                        !seen.contains(key),
                        "{} bound twice in {ctx:?}",
                        key.label()
                    );
                    seen.push(*key);
                }
            }
        }
    }

    #[test]
    fn any_key_closes_the_help_except_the_quit_keys() {
        for code in [
            KeyCode::Char('z'),
            KeyCode::Char('?'),
            KeyCode::Esc,
            KeyCode::F(5),
            KeyCode::Tab,
        ] {
            assert_eq!(
                command_for(&key(code), Context::Help),
                Some(Command::Dismiss)
            );
        }
        assert_eq!(
            command_for(&key(KeyCode::Char('q')), Context::Help),
            Some(Command::Quit)
        );
    }

    #[test]
    fn while_typing_a_filter_letters_are_text_and_only_ctrl_c_quits() {
        for c in ['q', 'j', 's', 'r', '?'] {
            assert_eq!(command_for(&key(KeyCode::Char(c)), Context::Filter), None);
        }
        assert_eq!(
            command_for(
                &KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                Context::Filter
            ),
            Some(Command::Quit)
        );
        assert_eq!(
            command_for(&key(KeyCode::Backspace), Context::Filter),
            Some(Command::Erase)
        );
    }

    #[test]
    fn esc_closes_an_error_and_modals_take_only_their_keys_and_quit() {
        assert_eq!(
            command_for(&key(KeyCode::Esc), Context::Error),
            Some(Command::Dismiss)
        );
        assert_eq!(
            command_for(&key(KeyCode::Char('r')), Context::Error),
            Some(Command::Refresh)
        );
        assert_eq!(command_for(&key(KeyCode::Char('j')), Context::Error), None);
        assert_eq!(command_for(&key(KeyCode::Char('s')), Context::Dialog), None);
        assert_eq!(
            command_for(&key(KeyCode::Char('q')), Context::Dialog),
            Some(Command::Quit)
        );
    }

    #[test]
    fn the_hint_bar_lists_the_contexts_own_keys_first_then_the_shared_ones() {
        let table = hint_line(Context::Table, |_| true);
        assert!(
            table.starts_with(
                "Space mark · c compact · P purge · x cancel job · f lift pace · C convert · t histogram · a janitor · w why · j/k move"
            ),
            "{table}"
        );
        assert!(table.ends_with("Esc back · ? help · q quit"), "{table}");
        assert!(!table.contains("open"), "{table}");
        let tables = hint_line(Context::Tables, |c| c != Command::Back);
        assert_eq!(
            tables,
            "Enter open · a janitor · j/k move · s sort · / filter · r reload · ? help · q quit"
        );
        assert_eq!(
            hint_line(Context::Filter, |_| true),
            "type to filter · Enter keep · Esc clear · Ctrl-c quit"
        );
        assert_eq!(
            hint_line(Context::Help, |_| true),
            "other keys close this help · j/k scroll · q quit"
        );
        assert_eq!(
            hint_line(Context::Error, |_| true),
            "Esc dismiss · r retry · q quit"
        );
    }

    #[test]
    fn help_lists_every_binding() {
        let n: usize = help_sections().iter().map(|(_, r)| r.len()).sum();
        assert_eq!(n, BINDINGS.len() + MOUSE.len());
    }
}
