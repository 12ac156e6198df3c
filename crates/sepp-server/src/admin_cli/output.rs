//! How the command line shows answers to a person: aligned tables and readable times.

use serde_json::Value;

/// Prints `rows` under `headers`, each column as wide as its widest cell.
pub fn table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|header| header.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> =
            cells.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}", width = *width)).collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// A JSON value as a table cell: strings without quotes, `-` for null.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD hh:mm:ss.mmmZ` (UTC).
pub fn time_at(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    let (hours, minutes, seconds, millis) =
        (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{year:04}-{month:02}-{day:02} {hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z")
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC: `YYYY-MM-DDThh:mm:ss.mmmZ`.
pub fn rfc3339_ms(ms: i64) -> String {
    time_at(ms).replacen(' ', "T", 1)
}

/// The calendar date of a day number (days since 1970-01-01), in the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_as_utc_dates() {
        assert_eq!(time_at(0), "1970-01-01 00:00:00.000Z");
        assert_eq!(time_at(1_796_119_241_398), "2026-12-01 10:00:41.398Z");
        assert_eq!(time_at(951_782_400_000), "2000-02-29 00:00:00.000Z");
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
