import MBaaSCore

/// Plain-text tables for `--format table`.
struct TextTable {
    var headers: [String]
    var rows: [[String]]
    var maxWidth = 40

    var rendered: String {
        let cells = ([headers] + rows).map { $0.map { Self.clip($0, maxWidth) } }
        var widths = Array(repeating: 0, count: headers.count)
        // Columns on the screen, not characters: a kanji takes two.
        for row in cells { for (i, c) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], c.displayWidth) } }
        func line(_ row: [String]) -> String {
            row.enumerated().map { i, c in c.padded(toDisplayWidth: widths[i]) }
                .joined(separator: "  ").trimmingTrailingSpaces()
        }
        var out = [line(cells[0]), line(widths.map { String(repeating: "-", count: $0) })]
        out += cells.dropFirst().map(line)
        return out.joined(separator: "\n")
    }

    private static func clip(_ s: String, _ n: Int) -> String {
        let flat = escapingControlCharacters(s, keepNewlines: false)
        return flat.clipped(toDisplayWidth: n)
    }

    /// A two-column key/value table.
    static func keyValue(_ pairs: [(String, String)]) -> String {
        TextTable(headers: ["key", "value"], rows: pairs.map { [$0.0, $0.1] }, maxWidth: 100).rendered
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// A short human form of a value for tables.
func display(_ value: Value?) -> String {
    guard let value else { return "" }
    switch value {
    case .null: return "null"
    case .bool(let b): return b ? "true" : "false"
    case .int(let i): return String(i)
    case .double(let d): return String(d)
    case .string(let s): return s
    case .date(let d): return ISO8601.format(d)
    case .bytes(let b): return "<\(b.count) bytes>"
    case .pointer(let p): return "→\(p.className)/\(p.objectId)"
    case .file(let f): return "file:\(f.name)"
    case .geoPoint(let g): return "(\(g.latitude), \(g.longitude))"
    case .array, .object: return value.json.printed([.sortedKeys])
    }
}

/// One record as a key/value table.
func recordTable(_ r: Record) -> String {
    var pairs: [(String, String)] = [("class", r.className), ("id", r.id ?? "")]
    if let c = r.createdAt { pairs.append(("createdAt", ISO8601.format(c))) }
    if let u = r.updatedAt { pairs.append(("updatedAt", ISO8601.format(u))) }
    if let v = r.version { pairs.append(("version", v)) }
    if let acl = r.acl { pairs.append(("acl", acl.json.printed())) }
    for key in r.fields.keys.sorted() { pairs.append((key, display(r.fields[key]))) }
    return TextTable.keyValue(pairs)
}

/// Records as one table: id, every field (in order of first appearance, sorted per record), updatedAt.
func recordsTable(_ records: [Record]) -> String {
    var keys: [String] = []
    for r in records { for k in r.fields.keys.sorted() where !keys.contains(k) { keys.append(k) } }
    let rows = records.map { r in [r.id ?? ""] + keys.map { display(r.fields[$0]) } + [r.updatedAt.map(ISO8601.format) ?? ""] }
    return TextTable(headers: ["id"] + keys + ["updatedAt"], rows: rows).rendered
}

/// Text made safe for a terminal: stored values, ids, file names and error messages cannot move the cursor,
/// clear the screen, ring the bell or change colours. A newline becomes `⏎` (or stays, with `keepNewlines`);
/// every other C0 control (ESC, BEL, CR, TAB, …), DEL, a C1 control (U+0080–U+009F) and the bidirectional
/// overrides (U+202A–U+202E, U+2066–U+2069) become a visible escape such as `\x1B` or `\u{202E}`.
func escapingControlCharacters(_ s: String, keepNewlines: Bool) -> String {
    guard s.unicodeScalars.contains(where: needsEscape) else { return s }
    var out = String.UnicodeScalarView()
    for scalar in s.unicodeScalars {
        if scalar == "\n" {
            out.append(contentsOf: keepNewlines ? "\n".unicodeScalars : "⏎".unicodeScalars)
        } else if needsEscape(scalar) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let text = scalar.value <= 0xFF ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{\(hex)}"
            out.append(contentsOf: text.unicodeScalars)
        } else {
            out.append(scalar)
        }
    }
    return String(out)
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    let v = scalar.value
    return v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
}
