//! Keybindings are data: this table drives both key handling and the generated `?` help screen.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Command;

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    Tables,
    Table,
    /// A dialog (plan preview, confirmation) is open.
    Dialog,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Tables => "Tables list",
            Context::Table => "Table view",
            Context::Dialog => "Dialogs",
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
}

use Command as C;
use Context::{Dialog as D, Global as G, Table as T, Tables as L};

pub static BINDINGS: &[Binding] = &[
    Binding {
        keys: &[k(KeyCode::Char('q')), ctrl('c')],
        command: C::Quit,
        context: G,
        help: "quit",
    },
    Binding {
        keys: &[k(KeyCode::Char('?'))],
        command: C::Help,
        context: G,
        help: "show / hide this help",
    },
    Binding {
        keys: &[k(KeyCode::Char('k')), k(KeyCode::Up)],
        command: C::Up,
        context: G,
        help: "move up",
    },
    Binding {
        keys: &[k(KeyCode::Char('j')), k(KeyCode::Down)],
        command: C::Down,
        context: G,
        help: "move down",
    },
    Binding {
        keys: &[ctrl('u'), k(KeyCode::PageUp)],
        command: C::PageUp,
        context: G,
        help: "page up",
    },
    Binding {
        keys: &[ctrl('d'), k(KeyCode::PageDown)],
        command: C::PageDown,
        context: G,
        help: "page down",
    },
    Binding {
        keys: &[k(KeyCode::Char('g')), k(KeyCode::Home)],
        command: C::Top,
        context: G,
        help: "first row",
    },
    Binding {
        keys: &[k(KeyCode::Char('G')), k(KeyCode::End)],
        command: C::Bottom,
        context: G,
        help: "last row",
    },
    Binding {
        keys: &[k(KeyCode::Char('r'))],
        command: C::Refresh,
        context: G,
        help: "reload from the log",
    },
    Binding {
        keys: &[k(KeyCode::Enter), k(KeyCode::Char('l')), k(KeyCode::Right)],
        command: C::Enter,
        context: L,
        help: "open the selected table",
    },
    Binding {
        keys: &[
            k(KeyCode::Esc),
            k(KeyCode::Backspace),
            k(KeyCode::Char('h')),
            k(KeyCode::Left),
        ],
        command: C::Back,
        context: T,
        help: "back to the tables list / clear filter",
    },
    Binding {
        keys: &[k(KeyCode::Char('s'))],
        command: C::CycleSort,
        context: G,
        help: "sort by next column (excess, small share, bytes, files, name, health)",
    },
    Binding {
        keys: &[k(KeyCode::Char('S'))],
        command: C::ReverseSort,
        context: G,
        help: "reverse the sort order",
    },
    Binding {
        keys: &[k(KeyCode::Char('/'))],
        command: C::Filter,
        context: G,
        help: "filter rows by name (Enter keeps, Esc clears)",
    },
    Binding {
        keys: &[k(KeyCode::Char('t'))],
        command: C::ToggleTableHistogram,
        context: T,
        help: "histogram of the whole table / of the selected partition",
    },
    Binding {
        keys: &[k(KeyCode::Char(' '))],
        command: C::ToggleMark,
        context: T,
        help: "mark / unmark the partition for compaction",
    },
    Binding {
        keys: &[k(KeyCode::Char('c'))],
        command: C::Compact,
        context: T,
        help: "preview a compaction of the marked (or selected) partitions",
    },
    Binding {
        keys: &[k(KeyCode::Char('x'))],
        command: C::CancelJob,
        context: T,
        help: "cancel the running compaction job (asks first)",
    },
    Binding {
        keys: &[k(KeyCode::Enter), k(KeyCode::Char('y'))],
        command: C::Confirm,
        context: D,
        help: "confirm: start the job / cancel the job",
    },
    Binding {
        keys: &[k(KeyCode::Esc), k(KeyCode::Char('n'))],
        command: C::Dismiss,
        context: D,
        help: "close the dialog without doing anything",
    },
];

/// The command bound to `ev` in `ctx` (context-specific bindings first, then global ones).
pub fn command_for(ev: &KeyEvent, ctx: Context) -> Option<Command> {
    if ctx == Context::Dialog {
        // Dialogs take their own keys, and quitting, nothing else.
        return BINDINGS
            .iter()
            .filter(|b| b.context == Context::Dialog || b.command == Command::Quit)
            .find(|b| b.keys.iter().any(|key| key.matches(ev)))
            .map(|b| b.command);
    }
    BINDINGS
        .iter()
        .filter(|b| b.context == ctx)
        .chain(BINDINGS.iter().filter(|b| b.context == Context::Global))
        .find(|b| b.keys.iter().any(|key| key.matches(ev)))
        .map(|b| b.command)
}

/// Help lines grouped by context: (context title, [(keys, help)]).
pub fn help_sections() -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    [
        Context::Global,
        Context::Tables,
        Context::Table,
        Context::Dialog,
    ]
    .into_iter()
    .map(|ctx| {
        let rows = BINDINGS
            .iter()
            .filter(|b| b.context == ctx)
            .map(|b| {
                let keys: Vec<String> = b.keys.iter().map(Key::label).collect();
                (keys.join(" / "), b.help)
            })
            .collect();
        (ctx.title(), rows)
    })
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
        for ctx in [Context::Tables, Context::Table, Context::Dialog] {
            let mut seen = Vec::new();
            let global = if ctx == Context::Dialog {
                Context::Dialog
            } else {
                Context::Global
            };
            for b in BINDINGS
                .iter()
                .filter(|b| b.context == ctx || b.context == global)
            {
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
    fn help_lists_every_binding() {
        let n: usize = help_sections().iter().map(|(_, r)| r.len()).sum();
        assert_eq!(n, BINDINGS.len());
    }
}
