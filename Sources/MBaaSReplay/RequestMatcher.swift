import Foundation
public import MBaaSCore

/// The matching rules of ``ReplayingTransport``, as pure functions.
///
/// # Contract
/// A live request matches a recorded one when all of these hold; the first that fails is the *difference*
/// reported for near misses:
/// 1. **method**, compared case-insensitively;
/// 2. **path**, compared percent-decoded (scheme, host and port are never compared);
/// 3. **query**: the same parameter names with the same values, in any order of names (repeated names keep their
///    relative order); a value that is a JSON object or array on both sides (`where=`) is compared as JSON;
/// 4. **headers**: every recorded header that is not volatile (the `ignoring` set: the adapter's
///    ``WireProfile/volatileHeaders``, by default ``RequestMatcher/volatileHeaders``) must be
///    sent with the same value (`Content-Type` by media type only: boundary and charset are ignored); headers the
///    live request sends but the cassette does not list are ignored, except `Authorization`: a request recorded
///    without it (anonymous) does not match a live one that carries it (identified); a header named in the
///    recording's `pinnedHeaders` must match exactly even if it is volatile;
/// 5. **body**, compared semantically: JSON ignoring key order and whitespace (`1` equals `1.0`); multipart part
///    by part (name, file name, content type, content), boundary ignored; `application/x-www-form-urlencoded` by
///    fields in any order; other text and binary bodies byte for byte.
public enum RequestMatcher {
    /// Lowercased header names that change on every request or every client, for any adapter: the
    /// ``WireProfile/volatileHeaders`` of ``WireProfile/generic`` (clocks, clients, transport framing, request ids).
    /// Ignored by the matcher unless pinned, and not captured by the recorder by default. An adapter's own volatile
    /// headers (a signature over a clock, an SDK version) come from its profile: ``volatileHeaders(for:)``.
    public static let volatileHeaders: Set<String> = volatileHeaders(for: .generic)

    /// A profile's volatile header names, lowercased: what ``ReplayingTransport`` ignores when replaying that
    /// adapter's cassettes.
    public static func volatileHeaders(for profile: WireProfile) -> Set<String> {
        Set(profile.volatileHeaders.map { $0.lowercased() })
    }

    /// The first difference between a recorded request and a live one, or `nil` when they match.
    public static func difference(
        recorded: RecordedRequest, live: TransportRequest, ignoring ignored: Set<String> = volatileHeaders
    ) -> String? {
        differences(recorded: recorded, live: Live(live), ignoring: Set(ignored.map { $0.lowercased() })).first
    }

    /// A live request reduced to what matching compares.
    struct Live {
        var request: TransportRequest
        var recorded: RecordedRequest

        init(_ request: TransportRequest) {
            self.request = request
            self.recorded = RecordedRequest(request)
        }

        var summary: String {
            var s = "\(request.method) \(recorded.path)"
            if let q = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedQuery, !q.isEmpty {
                s += "?" + (q.count > 120 ? String(q.prefix(120)) + "…" : q)
            }
            return s
        }
    }

    /// Differences in rule order; at most one per rule (method, path, query, headers, body).
    static func differences(recorded: RecordedRequest, live: Live, ignoring ignored: Set<String>) -> [String] {
        var out: [String] = []
        if recorded.method.uppercased() != live.recorded.method.uppercased() {
            out.append("method: expected \(recorded.method), got \(live.recorded.method)")
        }
        let expectedPath = recorded.path.removingPercentEncoding ?? recorded.path
        let actualPath = live.recorded.path.removingPercentEncoding ?? live.recorded.path
        if expectedPath != actualPath { out.append("path: expected \(quote(expectedPath)), got \(quote(actualPath))") }
        if let d = queryDifference(recorded.query, live.recorded.query) { out.append(d) }
        if let d = headerDifference(recorded, live.request.headers, ignoring: ignored) { out.append(d) }
        let contentType = live.request.headers["Content-Type"] ?? recorded.headers["Content-Type"]
        if let d = bodyDifference(recorded.body, live.recorded.body, contentType: contentType, label: "body") {
            out.append(d)
        }
        return out
    }

    // MARK: Query

    static func queryDifference(_ expected: [(name: String, value: String)], _ actual: [(name: String, value: String)]) -> String? {
        fieldsDifference(expected, actual, label: "query")
    }

    /// Compares name/value lists with names in any order; values of a repeated name in order.
    static func fieldsDifference(
        _ expected: [(name: String, value: String)], _ actual: [(name: String, value: String)], label: String
    ) -> String? {
        var names: [String] = []
        for item in expected + actual where !names.contains(item.name) { names.append(item.name) }
        for name in names {
            let e = expected.filter { $0.name == name }.map(\.value)
            let a = actual.filter { $0.name == name }.map(\.value)
            if e.isEmpty { return "\(label) '\(name)': expected nothing, got \(quote(a[0]))" }
            if a.isEmpty { return "\(label) '\(name)': expected \(quote(e[0])), got nothing" }
            for (ev, av) in zip(e, a) where ev != av {
                if let ej = structuredJSON(ev), let aj = structuredJSON(av) {
                    if let d = jsonDifference(ej, aj, path: "$") { return "\(label) '\(name)' \(d)" }
                    continue
                }
                return "\(label) '\(name)': expected \(quote(ev)), got \(quote(av))"
            }
            if e.count != a.count { return "\(label) '\(name)': expected \(e.count) values, got \(a.count)" }
        }
        return nil
    }

    static func structuredJSON(_ text: String) -> JSON? {
        guard let first = text.first(where: { !$0.isWhitespace }), first == "{" || first == "[",
              let json = try? JSON.parse(text) else { return nil }
        return json
    }

    // MARK: Headers

    static func headerDifference(_ recorded: RecordedRequest, _ live: HTTPFields, ignoring ignored: Set<String>) -> String? {
        let pinned = Set(recorded.pinnedHeaders.map { $0.lowercased() })
        var checked = Set<String>()
        for name in recorded.headers.names + recorded.pinnedHeaders {
            let lower = name.lowercased()
            guard checked.insert(lower).inserted else { continue }
            let isPinned = pinned.contains(lower)
            guard isPinned || !ignored.contains(lower) else { continue }
            let expected = recorded.headers.values(name)
            let actual = live.values(name)
            if isPinned || lower != "content-type" {
                if expected != actual {
                    return "header '\(name)'\(isPinned ? " (pinned)" : ""): expected \(describe(expected)), got \(describe(actual))"
                }
            } else if expected.map(normalizedContentType) != actual.map(normalizedContentType) {
                return "header '\(name)': expected \(describe(expected)), got \(describe(actual))"
            }
        }
        // Anonymous in the recording, identified live: not the same caller.
        if !checked.contains("authorization"), !ignored.contains("authorization"), let sent = live["Authorization"] {
            return "header 'Authorization': recorded without one (anonymous), got \(quote(sent))"
        }
        return nil
    }

    private static func describe(_ values: [String]) -> String {
        switch values.count {
        case 0: "nothing"
        case 1: quote(values[0])
        default: "[" + values.map(quote).joined(separator: ", ") + "]"
        }
    }

    /// `Multipart/Form-Data; boundary=x; charset=UTF-8` -> `multipart/form-data` (parameters such as the boundary
    /// and charset vary between clients of the same server).
    static func normalizedContentType(_ value: String) -> String { RecordedBody.mediaType(value) }

    // MARK: Bodies

    static func bodyDifference(_ expected: RecordedBody, _ actual: RecordedBody, contentType: String?, label: String) -> String? {
        let media = contentType.map(RecordedBody.mediaType) ?? ""
        switch (expected, actual) {
        case (.none, .none): return nil
        case (.json(let e), .json(let a)):
            return jsonDifference(e, a, path: "$").map { "\(label) \($0)" }
        case (.json(let e), .text(let t)), (.text(let t), .json(let e)):
            guard let parsed = try? JSON.parse(t) else {
                return "\(label): expected \(describe(expected)), got \(describe(actual))"
            }
            let (l, r) = expected.isJSON ? (e, parsed) : (parsed, e)
            return jsonDifference(l, r, path: "$").map { "\(label) \($0)" }
        case (.text(let e), .text(let a)):
            if e == a { return nil }
            if media == "application/x-www-form-urlencoded" {
                return fieldsDifference(parseForm(e), parseForm(a), label: "\(label) field")
            }
            if let ej = structuredJSON(e), let aj = structuredJSON(a) {
                return jsonDifference(ej, aj, path: "$").map { "\(label) \($0)" }
            }
            return "\(label): \(textDifference(e, a))"
        case (.multipart(let e), .multipart(let a)):
            if e.count != a.count {
                return "\(label): expected \(e.count) multipart parts (\(e.map(\.name).joined(separator: ", "))), got \(a.count) (\(a.map(\.name).joined(separator: ", ")))"
            }
            for (i, (ep, ap)) in zip(e, a).enumerated() {
                let partLabel = "\(label) part \(i) '\(ep.name)'"
                if ep.name != ap.name { return "\(label) part \(i): expected name \(quote(ep.name)), got \(quote(ap.name))" }
                if ep.filename != ap.filename {
                    return "\(partLabel): expected filename \(ep.filename.map(quote) ?? "none"), got \(ap.filename.map(quote) ?? "none")"
                }
                if ep.contentType.map(normalizedContentType) != ap.contentType.map(normalizedContentType) {
                    return "\(partLabel): expected content type \(ep.contentType.map(quote) ?? "none"), got \(ap.contentType.map(quote) ?? "none")"
                }
                if let d = bodyDifference(ep.body, ap.body, contentType: ep.contentType ?? ap.contentType, label: partLabel) {
                    return d
                }
            }
            return nil
        default:
            let e = expected.data(), a = actual.data()
            if e == a { return nil }
            if case .multipart = expected { return "\(label): expected multipart, got \(describe(actual))" }
            if case .multipart = actual { return "\(label): expected \(describe(expected)), got multipart" }
            if expected.isNone || actual.isNone { return "\(label): expected \(describe(expected)), got \(describe(actual))" }
            let offset = zip(e, a).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(e.count, a.count)
            return "\(label): expected \(e.count) bytes, got \(a.count) bytes (first difference at byte \(offset))"
        }
    }

    private static func describe(_ body: RecordedBody) -> String {
        switch body {
        case .none: "no body"
        case .json(let j): "JSON " + snippet(j.printed())
        case .text(let t): "text " + quote(t)
        case .base64(let d): "\(d.count) bytes"
        case .multipart(let p): "\(p.count) multipart parts"
        case .repeated(let unit, let times): "\(unit.count)-byte unit repeated \(times) times"
        }
    }

    static func parseForm(_ text: String) -> [(name: String, value: String)] {
        RecordedRequest.parseQuery(text.replacingOccurrences(of: "+", with: "%20"))
    }

    static func textDifference(_ e: String, _ a: String) -> String {
        let ec = Array(e), ac = Array(a)
        let offset = zip(ec, ac).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ec.count, ac.count)
        let start = max(0, offset - 10)
        func window(_ c: [Character]) -> String {
            let end = min(c.count, offset + 30)
            return (start > 0 ? "…" : "") + String(c[min(start, c.count)..<end]) + (end < c.count ? "…" : "")
        }
        return "texts differ at character \(offset): expected \(quote(window(ec))), got \(quote(window(ac)))"
    }

    // MARK: JSON

    /// The first difference between two JSON documents as `at $.a.b[2]: expected X, got Y`, or `nil` when they are
    /// semantically equal (key order ignored, `1 == 1.0`).
    public static func jsonDifference(_ expected: JSON, _ actual: JSON, path: String = "$") -> String? {
        switch (expected, actual) {
        case (.object(let e), .object(let a)):
            for (key, ev) in e {
                guard let av = a[key] else { return "at \(jsonPath(path, key)): expected \(snippet(ev.printed())), got nothing" }
                if let d = jsonDifference(ev, av, path: jsonPath(path, key)) { return d }
            }
            for (key, av) in a where e[key] == nil {
                return "at \(jsonPath(path, key)): expected nothing, got \(snippet(av.printed()))"
            }
            return nil
        case (.array(let e), .array(let a)):
            for (i, (ev, av)) in zip(e, a).enumerated() {
                if let d = jsonDifference(ev, av, path: "\(path)[\(i)]") { return d }
            }
            if e.count != a.count { return "at \(path): expected \(e.count) elements, got \(a.count)" }
            return nil
        default:
            if expected.semanticallyEquals(actual) { return nil }
            return "at \(path): expected \(snippet(expected.printed())), got \(snippet(actual.printed()))"
        }
    }

    static func jsonPath(_ base: String, _ key: String) -> String {
        let simple = !key.isEmpty && key.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-" || $0 == "$"
        } && key.unicodeScalars.allSatisfy(\.isASCII)
        return simple ? "\(base).\(key)" : "\(base)[\(JSON.string(key).printed())]"
    }

    static func quote(_ s: String) -> String { JSON.string(snippet(s, limit: 80)).printed() }

    static func snippet(_ s: String, limit: Int = 80) -> String {
        s.count > limit ? String(s.prefix(limit)) + "…" : s
    }
}

extension RecordedBody {
    var isJSON: Bool { if case .json = self { true } else { false } }
}
