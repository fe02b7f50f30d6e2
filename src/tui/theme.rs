//! The person's colours (the config file's `[theme]` table). The panels draw with a small
//! fixed palette, each colour with one meaning; a theme maps each of them to the person's
//! choice once the frame is drawn. The worker's own output keeps the colours it printed.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;

/// The palette the panels draw with: the config name, the default colour, what it shows.
pub const ROLES: &[(&str, Color, &str)] = &[
    ("accent", Color::Cyan, "focus, keys, running workers"),
    ("ok", Color::Green, "completed workers, passes"),
    ("warn", Color::Yellow, "questions, notices, warnings"),
    ("error", Color::Red, "failures"),
    ("crashed", Color::LightRed, "crashed workers"),
    ("starting", Color::Blue, "starting workers"),
    ("dim", Color::DarkGray, "borders, pending, headers"),
    ("text", Color::Gray, "secondary text"),
    ("on-accent", Color::Black, "text on a coloured bar"),
    ("selection", Color::Indexed(237), "the selected row"),
];

/// Colour replacements, default colour → the person's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Theme {
    map: Vec<(Color, Color)>,
}

/// Read a colour: a name (`red`, `light-blue`, `dark-gray`, …), `#rrggbb`, or an xterm
/// index `0`–`255` (ratatui's own names and forms).
///
/// # Errors
/// The text names no colour: the message says what to write.
pub fn parse_colour(text: &str) -> Result<Color, String> {
    text.parse::<Color>().map_err(|_| {
        format!(
            "`{text}` is not a colour: write a name (red, light-blue, dark-gray, …), \
             #rrggbb, or an xterm index 0-255"
        )
    })
}

impl Theme {
    /// Draw `role` (one of [`ROLES`]) in `colour`.
    ///
    /// # Errors
    /// `role` is not a palette name: the message lists them.
    pub fn set(&mut self, role: &str, colour: Color) -> Result<(), String> {
        let Some((_, default, _)) = ROLES.iter().find(|(n, _, _)| *n == role) else {
            let names: Vec<&str> = ROLES.iter().map(|(n, _, _)| *n).collect();
            return Err(format!(
                "unknown theme colour `{role}`: use one of {}",
                names.join(", ")
            ));
        };
        self.map.retain(|(from, _)| from != default);
        if colour != *default {
            self.map.push((*default, colour));
        }
        Ok(())
    }

    /// True when every colour is the default.
    pub fn is_default(&self) -> bool {
        self.map.is_empty()
    }

    fn map(&self, c: Color) -> Color {
        self.map
            .iter()
            .find(|(from, _)| *from == c)
            .map_or(c, |(_, to)| *to)
    }

    /// Recolour the drawn `area` of `buf`, leaving `keep` (the worker's output) as it is.
    pub fn apply(&self, buf: &mut Buffer, area: Rect, keep: Option<Rect>) {
        if self.map.is_empty() {
            return;
        }
        for y in area.top()..area.bottom() {
            for x in area.left()..area.right() {
                if keep.is_some_and(|k| k.contains((x, y).into())) {
                    continue;
                }
                if let Some(cell) = buf.cell_mut((x, y)) {
                    let (fg, bg) = (self.map(cell.fg), self.map(cell.bg));
                    cell.set_fg(fg).set_bg(bg);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_read_by_name_hex_and_index() {
        assert_eq!(parse_colour("magenta").unwrap(), Color::Magenta);
        assert_eq!(parse_colour("#ff8800").unwrap(), Color::Rgb(255, 136, 0));
        assert_eq!(parse_colour("208").unwrap(), Color::Indexed(208));
        assert!(parse_colour("bluish")
            .unwrap_err()
            .contains("is not a colour"));
    }

    #[test]
    fn a_theme_maps_its_roles_and_keeps_the_rest() {
        let mut t = Theme::default();
        t.set("error", Color::Magenta).unwrap();
        let area = Rect::new(0, 0, 3, 1);
        let mut buf = Buffer::empty(area);
        buf[(0, 0)].set_fg(Color::Red);
        buf[(1, 0)].set_fg(Color::Green);
        buf[(2, 0)].set_fg(Color::Red);
        t.apply(&mut buf, area, Some(Rect::new(2, 0, 1, 1)));
        assert_eq!(buf[(0, 0)].fg, Color::Magenta);
        assert_eq!(buf[(1, 0)].fg, Color::Green);
        assert_eq!(
            buf[(2, 0)].fg,
            Color::Red,
            "the kept area is not recoloured"
        );
        assert!(t
            .set("errors", Color::Red)
            .unwrap_err()
            .contains("use one of accent"));
    }
}
