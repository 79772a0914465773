public import Foundation
public import MBaaSCore

/// A recorded (or hand-authored) conversation between one client and one server, for one scenario.
///
/// Cassettes live in `Fixtures/Cassettes/<adapter>/<scenario-id>.json` and are replayed by
/// ``ReplayingTransport``. The file format is described field by field in the module overview (`MBaaSReplay.md`).
///
/// # Contract
/// - `Cassette(json:)` and ``json`` round-trip: `try Cassette(json: c.json) == c`.
/// - ``write(to:)`` prints pretty JSON with a fixed key order and a trailing newline, so the same cassette always
///   produces the same bytes (diffs in review show only real changes).
/// - ``load(from:substitutions:)`` replaces every placeholder (`<APPLICATION_KEY>`, `<TOKEN_1>`) by its value from
///   `substitutions`, or by ``Cassette/dummyValue(forPlaceholder:)`` (`replay-application-key`, `replay-token-1`).
/// - A cassette of a newer ``formatVersion`` than this library reads is rejected with a clear error.
public struct Cassette: Sendable, Equatable {
    /// The format version this library writes and the newest it reads.
    public static let currentFormatVersion = 1

    public var formatVersion: Int
    /// The scenario id, e.g. `objects.crud.basic`.
    public var name: String
    /// The adapter that produced the traffic (its ``BackendFactory/adapterName``).
    public var adapter: String
    public var provenance: Provenance
    /// When the recording was made, from the caller's pinned clock; replays pin their clock to it.
    public var recordedAt: Date
    /// The backend URL the client was opened with, secrets as placeholders.
    public var backendURL: String?
    /// Non-secret values chosen at record time (generated names such as `run`), read back on replay.
    public var variables: [String: String]
    public var interactions: [Interaction]

    public init(
        formatVersion: Int = Cassette.currentFormatVersion, name: String, adapter: String, provenance: Provenance,
        recordedAt: Date, backendURL: String? = nil, variables: [String: String] = [:], interactions: [Interaction] = []
    ) {
        self.formatVersion = formatVersion
        self.name = name
        self.adapter = adapter
        self.provenance = provenance
        self.recordedAt = recordedAt
        self.backendURL = backendURL
        self.variables = variables
        self.interactions = interactions
    }

    // MARK: JSON

    /// The cassette document, keys in the documented order.
    public var json: JSON {
        var o: JSONObject = [
            "formatVersion": .int(Int64(formatVersion)),
            "name": .string(name),
            "adapter": .string(adapter),
            "provenance": provenance.json,
            "recordedAt": .string(ISO8601.format(recordedAt)),
        ]
        if let backendURL { o["backendURL"] = .string(backendURL) }
        o["variables"] = .object(JSONObject(sorting: variables.mapValues { .string($0) }))
        o["interactions"] = .array(interactions.map(\.json))
        return .object(o)
    }

    /// Reads a cassette document; a malformed one is a ``MBaaSError/Kind/decoding`` error naming the field.
    public init(json: JSON) throws {
        guard let o = json.objectValue else { throw CassetteFormatError.at("$", "expected an object") }
        guard let version = o["formatVersion"]?.intValue else {
            throw CassetteFormatError.at("formatVersion", "expected an integer")
        }
        guard version >= 1, version <= Cassette.currentFormatVersion else {
            throw CassetteFormatError.at("formatVersion", "version \(version) is not supported (this library reads 1...\(Cassette.currentFormatVersion))")
        }
        guard let name = o["name"]?.stringValue else { throw CassetteFormatError.at("name", "expected a string") }
        guard let adapter = o["adapter"]?.stringValue else { throw CassetteFormatError.at("adapter", "expected a string") }
        guard let recordedText = o["recordedAt"]?.stringValue, let recordedAt = ISO8601.parse(recordedText) else {
            throw CassetteFormatError.at("recordedAt", "expected an ISO 8601 date such as 2024-03-31T12:00:00.000Z")
        }
        var variables: [String: String] = [:]
        if let v = o["variables"], !v.isNull {
            guard let vo = v.objectValue else { throw CassetteFormatError.at("variables", "expected an object of strings") }
            for (key, value) in vo {
                guard let s = value.stringValue else { throw CassetteFormatError.at("variables.\(key)", "expected a string") }
                variables[key] = s
            }
        }
        var interactions: [Interaction] = []
        for (i, item) in (o["interactions"]?.arrayValue ?? []).enumerated() {
            interactions.append(try Interaction(json: item, at: "interactions[\(i)]"))
        }
        if let i = o["interactions"], i.arrayValue == nil {
            throw CassetteFormatError.at("interactions", "expected an array")
        }
        let provenance = try Provenance(json: o["provenance"] ?? .null)
        // "recorded" means a real vendor server answered: an exchange answered by the emulator contradicts it.
        if provenance.kind == .recorded {
            if let emulator = provenance.emulator {
                throw CassetteFormatError.at("provenance.emulator", "the cassette says \"recorded\" but names the emulator that answered (\(emulator)): a cassette recorded from MBaaSKit's emulator is \"simulated\"")
            }
            for (i, interaction) in interactions.enumerated() {
                if let identity = ServerIdentity(headers: interaction.response.headers), identity.isEmulator {
                    throw CassetteFormatError.at("interactions[\(i)].response.headers", "provenance.kind is \"recorded\" but MBaaSKit's emulator answered this exchange (\(identity.emulatorDescription)): a cassette recorded from the emulator is \"simulated\"")
                }
            }
        }
        self.init(
            formatVersion: Int(version), name: name, adapter: adapter,
            provenance: provenance, recordedAt: recordedAt,
            backendURL: o["backendURL"]?.stringValue, variables: variables, interactions: interactions)
    }

    /// The bytes ``write(to:)`` writes: pretty JSON in the documented key order, with a trailing newline.
    public var fileData: Data { Data((json.printed([.pretty]) + "\n").utf8) }

    /// Writes the cassette atomically, creating missing directories.
    public func write(to url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try fileData.write(to: url, options: .atomic)
        } catch {
            throw MBaaSError(.invalidRequest, "cannot write cassette \(url.path): \(MBaaSError.describe(error))")
        }
    }

    /// Reads a cassette file and replaces its placeholders (see the type's contract).
    public static func load(from url: URL, substitutions: [String: String] = [:]) throws -> Cassette {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MBaaSError(.notFound, "cannot read cassette \(url.path): \(MBaaSError.describe(error))")
        }
        do {
            return try Cassette(json: JSON.parse(data)).substituting(substitutions)
        } catch let error as MBaaSError {
            throw MBaaSError(error.kind, "\(url.lastPathComponent): \(error.message)", underlying: error)
        } catch let error as JSONParseError {
            throw MBaaSError(.decoding, "\(url.lastPathComponent): \(error.description)", underlying: error)
        }
    }
}

/// Where a cassette's truth comes from: a live vendor server, MBaaSKit's own emulator, or documented facts.
///
/// # Contract
/// - ``Kind/recorded`` means a real vendor server answered: a cassette that says so while one of its exchanges
///   shows the emulator's identification (``ServerIdentity``), or whose ``emulator`` is set, is a format error.
/// - ``serverVersionFrom`` says where ``serverVersion`` came from: what the server said, or a value given by
///   whoever recorded (`--server-version`) because the server said nothing. Absent in cassettes written before it
///   existed.
public struct Provenance: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Captured from a running vendor server by ``RecordingTransport``.
        case recorded
        /// Captured by ``RecordingTransport`` from MBaaSKit's emulator (`mbaas serve`), which names itself in
        /// every response: this project's reading of the vendor, replayed as `simulated`, never as `recorded`.
        case simulated
        /// Written by hand from documented facts (vendor docs, SDK test vectors), or generated by a simulator of
        /// this project, e.g. for a closed vendor.
        case authored
    }

    /// Where ``serverVersion`` came from.
    public enum VersionSource: String, Sendable, Hashable, CaseIterable {
        /// The server said it (a `Server` header, or the emulator's own version).
        case server
        /// Given by whoever recorded (`mbaas conformance --server-version`), because the server said nothing.
        case flag
    }

    public var kind: Kind
    /// The server product the traffic came from or follows.
    public var server: String?
    public var serverVersion: String?
    /// Where ``serverVersion`` came from; `nil` when unknown (older cassettes, authored ones).
    public var serverVersionFrom: VersionSource?
    /// How MBaaSKit's emulator named itself, for a ``Kind/simulated`` recording (`mbaas-emulator/0.9.0 (dialect ncmb)`).
    public var emulator: String?
    /// Documented facts the cassette follows, e.g. `vendor.md §1.2 create returns 201 {objectId, createDate}`.
    public var facts: [String]
    public var notes: String?

    public init(kind: Kind, server: String? = nil, serverVersion: String? = nil, facts: [String] = [], notes: String? = nil,
                serverVersionFrom: VersionSource? = nil, emulator: String? = nil) {
        self.kind = kind
        self.server = server
        self.serverVersion = serverVersion
        self.serverVersionFrom = serverVersionFrom
        self.emulator = emulator
        self.facts = facts
        self.notes = notes
    }

    public static func recorded(server: String, version: String? = nil, notes: String? = nil) -> Provenance {
        Provenance(kind: .recorded, server: server, serverVersion: version, notes: notes)
    }

    public static func authored(server: String? = nil, facts: [String], notes: String? = nil) -> Provenance {
        Provenance(kind: .authored, server: server, facts: facts, notes: notes)
    }

    /// The provenance of a live recording, measured from what answered (``RecordingTransport/servers``), not
    /// declared: when the emulator answered any exchange the kind is ``Kind/simulated`` with the emulator's name and
    /// version; else the kind stays as given and, for a ``Kind/recorded`` one, a version the server stated replaces
    /// the given one, which is kept (``VersionSource/flag``) only when the server stated none.
    public func measured(from servers: [ServerIdentity]) -> Provenance {
        var out = self
        if let emulator = servers.first(where: \.isEmulator) {
            out.kind = .simulated
            out.emulator = emulator.emulatorDescription
            out.server = "MBaaSKit emulator" + (emulator.emulatorDialect.map { ", \($0) dialect" } ?? "")
            out.serverVersion = emulator.version
            out.serverVersionFrom = emulator.version == nil ? nil : .server
            return out
        }
        guard kind == .recorded else { return out }
        if let stated = servers.first(where: { $0.version != nil }) {
            out.serverVersion = stated.version
            out.serverVersionFrom = .server
        } else if out.serverVersion != nil {
            out.serverVersionFrom = .flag
        }
        return out
    }

    public var json: JSON {
        var o: JSONObject = ["kind": .string(kind.rawValue)]
        if let server { o["server"] = .string(server) }
        if let serverVersion { o["serverVersion"] = .string(serverVersion) }
        if let serverVersionFrom { o["serverVersionFrom"] = .string(serverVersionFrom.rawValue) }
        if let emulator { o["emulator"] = .string(emulator) }
        if !facts.isEmpty { o["facts"] = .array(facts.map { .string($0) }) }
        if let notes { o["notes"] = .string(notes) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw CassetteFormatError.at("provenance", "expected an object") }
        guard let k = o["kind"]?.stringValue, let kind = Kind(rawValue: k) else {
            throw CassetteFormatError.at("provenance.kind", "expected \"recorded\", \"simulated\" or \"authored\"")
        }
        var facts: [String] = []
        for item in o["facts"]?.arrayValue ?? [] {
            guard let s = item.stringValue else { throw CassetteFormatError.at("provenance.facts", "expected strings") }
            facts.append(s)
        }
        var source: VersionSource?
        if let v = o["serverVersionFrom"], !v.isNull {
            guard let text = v.stringValue, let s = VersionSource(rawValue: text) else {
                throw CassetteFormatError.at("provenance.serverVersionFrom", "expected \"server\" or \"flag\"")
            }
            source = s
        }
        self.init(kind: kind, server: o["server"]?.stringValue, serverVersion: o["serverVersion"]?.stringValue,
                  facts: facts, notes: o["notes"]?.stringValue, serverVersionFrom: source,
                  emulator: o["emulator"]?.stringValue)
    }
}

/// One request and the response the server gave to it.
public struct Interaction: Sendable, Equatable {
    public var request: RecordedRequest
    public var response: RecordedResponse
    /// The fact this exchange follows (authored cassettes), starting with its evidence mark, e.g.
    /// `[doc] vendor.md §2.1 token endpoint` or `[sdk] vendor_swift QueryTests: where= JSON` (see ``Evidence``).
    public var fact: String?

    /// The response header in which a simulator names the fact its answer follows. ``RecordingTransport`` moves
    /// it into ``fact``; it never reaches the client or the cassette's headers.
    public static let factHeader = "X-MBaaS-Fact"

    /// Where a fact comes from, written as the fact's first word in brackets.
    public enum Evidence: String, Sendable, Hashable, CaseIterable {
        /// The vendor's documentation.
        case doc
        /// A vendor SDK's test or code.
        case sdk
        /// A real server's traffic.
        case capture
        /// Nobody's evidence: this project's reading. Must not contradict the reference.
        case inferred
    }

    /// The fact of an exchange a vendor's server answered while recording: `[capture] PocketBase 0.40.6`
    /// (`[capture] PocketBase (version not stated)` without a version).
    public static func captureFact(server: String, version: String?) -> String {
        "[\(Evidence.capture.rawValue)] \(server) \(version ?? "(version not stated)")"
    }

    /// The evidence mark the fact starts with (`[doc] …`), or `nil` when the fact is missing or unmarked.
    public var evidence: Evidence? {
        guard let fact, fact.hasPrefix("["), let close = fact.firstIndex(of: "]") else { return nil }
        return Evidence(rawValue: String(fact[fact.index(after: fact.startIndex)..<close]))
    }

    public init(request: RecordedRequest, response: RecordedResponse, fact: String? = nil) {
        self.request = request
        self.response = response
        self.fact = fact
    }

    public var json: JSON {
        var o = JSONObject()
        if let fact { o["fact"] = .string(fact) }
        o["request"] = request.json
        o["response"] = response.json
        return .object(o)
    }

    public init(json: JSON, at path: String) throws(MBaaSError) {
        guard let o = json.objectValue else { throw CassetteFormatError.at(path, "expected an object") }
        guard let request = o["request"] else { throw CassetteFormatError.at(path + ".request", "missing") }
        guard let response = o["response"] else { throw CassetteFormatError.at(path + ".response", "missing") }
        self.init(request: try RecordedRequest(json: request, at: path + ".request"),
                  response: try RecordedResponse(json: response, at: path + ".response"),
                  fact: o["fact"]?.stringValue)
    }

    /// `GET /path` for messages.
    public var summary: String { "\(request.method) \(request.path)" }
}

/// A request as stored in a cassette: what the matcher compares.
public struct RecordedRequest: Sendable, Equatable {
    public var method: String
    /// The path as sent, percent-encoded (`/2013-09-01/classes/Memo`). Compared percent-decoded.
    public var path: String
    /// Query parameters, percent-decoded, in the order sent. Compared in any order.
    public var query: [(name: String, value: String)]
    /// The selected request headers (content type and vendor headers). Compared unless volatile.
    public var headers: HTTPFields
    /// Header names that must match exactly even if they are volatile (e.g. a request signature computed with a
    /// fixed key and a pinned clock).
    public var pinnedHeaders: [String]
    public var body: RecordedBody

    public init(
        method: String, path: String, query: [(name: String, value: String)] = [], headers: HTTPFields = [:],
        pinnedHeaders: [String] = [], body: RecordedBody = .none
    ) {
        self.method = method.uppercased()
        self.path = path
        self.query = query
        self.headers = headers
        self.pinnedHeaders = pinnedHeaders
        self.body = body
    }

    /// The stored form of a live request, keeping only headers `keepHeader` accepts.
    public init(_ request: TransportRequest, keepHeader: (String) -> Bool = { _ in true }) {
        let (path, query) = RecordedRequest.split(request.url)
        self.init(method: request.method.rawValue, path: path, query: query,
                  headers: HTTPFields(request.headers.filter { keepHeader($0.name.rawName) }),
                  body: RecordedBody.from(data: request.body, contentType: request.headers["Content-Type"]))
    }

    /// The percent-encoded path and the decoded query items of a URL.
    public static func split(_ url: URL) -> (path: String, query: [(name: String, value: String)]) {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var path = components?.percentEncodedPath ?? url.path
        if path.isEmpty { path = "/" }
        return (path, parseQuery(components?.percentEncodedQuery))
    }

    /// Splits `a=1&b=%20x` into decoded pairs (a `+` stays a `+`: the core encodes spaces as `%20`).
    public static func parseQuery(_ query: String?) -> [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = kv[0].removingPercentEncoding ?? kv[0]
            let value = kv.count > 1 ? (kv[1].removingPercentEncoding ?? kv[1]) : ""
            return (name, value)
        }
    }

    public static func == (a: RecordedRequest, b: RecordedRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.query.map { [$0.name, $0.value] } == b.query.map { [$0.name, $0.value] }
            && a.headers == b.headers && a.pinnedHeaders == b.pinnedHeaders && a.body == b.body
    }

    public var json: JSON {
        var o: JSONObject = ["method": .string(method), "path": .string(path)]
        if !query.isEmpty {
            o["query"] = .array(query.map { item in
                // A JSON-valued parameter (where=, sort=) is stored as JSON when that is lossless, for readability.
                if let parsed = try? JSON.parse(item.value), parsed.objectValue != nil || parsed.arrayValue != nil,
                   parsed.printed() == item.value {
                    return .object(["name": .string(item.name), "json": parsed])
                }
                return .object(["name": .string(item.name), "value": .string(item.value)])
            })
        }
        if !headers.isEmpty { o["headers"] = headersJSON(headers) }
        if !pinnedHeaders.isEmpty { o["pinnedHeaders"] = .array(pinnedHeaders.map { .string($0) }) }
        if !body.isNone { o["body"] = body.json }
        return .object(o)
    }

    public init(json: JSON, at path: String) throws(MBaaSError) {
        guard let o = json.objectValue else { throw CassetteFormatError.at(path, "expected an object") }
        guard let method = o["method"]?.stringValue else { throw CassetteFormatError.at(path + ".method", "expected a string") }
        guard let p = o["path"]?.stringValue, p.hasPrefix("/") else {
            throw CassetteFormatError.at(path + ".path", "expected a string starting with /")
        }
        var query: [(name: String, value: String)] = []
        switch o["query"] {
        case nil, .null?: break
        case .array(let items)?:
            for (i, item) in items.enumerated() {
                guard let name = item["name"]?.stringValue else {
                    throw CassetteFormatError.at("\(path).query[\(i)].name", "expected a string")
                }
                if let value = item["value"]?.stringValue { query.append((name, value)) }
                else if let json = item["json"] { query.append((name, json.printed())) }
                else { throw CassetteFormatError.at("\(path).query[\(i)]", "expected \"value\" (string) or \"json\"") }
            }
        case .object(let items)?:
            // Authoring shorthand: {"limit": "2", "where": {...}}.
            for (name, value) in items { query.append((name, value.stringValue ?? value.printed())) }
        default:
            throw CassetteFormatError.at(path + ".query", "expected an array of {name, value|json}")
        }
        var pinned: [String] = []
        for item in o["pinnedHeaders"]?.arrayValue ?? [] {
            guard let s = item.stringValue else { throw CassetteFormatError.at(path + ".pinnedHeaders", "expected strings") }
            pinned.append(s)
        }
        self.init(method: method, path: p, query: query, headers: try parseHeaders(o["headers"], at: path + ".headers"),
                  pinnedHeaders: pinned, body: try RecordedBody(json: o["body"] ?? .null, at: path + ".body"))
    }
}

/// A response as stored in a cassette.
public struct RecordedResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPFields
    public var body: RecordedBody

    public init(status: Int, headers: HTTPFields = [:], body: RecordedBody = .none) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(_ response: TransportResponse, keepHeader: (String) -> Bool = { _ in true }) {
        self.init(status: response.status.code,
                  headers: HTTPFields(response.headers.filter { keepHeader($0.name.rawName) }),
                  body: RecordedBody.from(data: response.body, contentType: response.headers["Content-Type"]))
    }

    /// The response a replay returns: the recorded status, headers and body bytes (multipart with the boundary of
    /// the recorded `Content-Type`).
    public var httpResponse: TransportResponse {
        let boundary = headers["Content-Type"].flatMap(MultipartForm.boundary(fromContentType:)) ?? "mbaas-replay-boundary"
        return TransportResponse(status: .init(code: status), headers: headers, body: body.data(boundary: boundary))
    }

    public var json: JSON {
        var o: JSONObject = ["status": .int(Int64(status))]
        if !headers.isEmpty { o["headers"] = headersJSON(headers) }
        if !body.isNone { o["body"] = body.json }
        return .object(o)
    }

    public init(json: JSON, at path: String) throws(MBaaSError) {
        guard let o = json.objectValue else { throw CassetteFormatError.at(path, "expected an object") }
        guard let status = o["status"]?.intValue, (100...599).contains(status) else {
            throw CassetteFormatError.at(path + ".status", "expected an HTTP status code")
        }
        self.init(status: Int(status), headers: try parseHeaders(o["headers"], at: path + ".headers"),
                  body: try RecordedBody(json: o["body"] ?? .null, at: path + ".body"))
    }
}

// MARK: - Header coding

/// Headers as a JSON object in the order sent; a repeated name becomes an array of its values.
func headersJSON(_ headers: HTTPFields) -> JSON {
    var o = JSONObject()
    var seen: [String: String] = [:]  // lowercased -> first spelling
    for field in headers where seen[field.name.canonicalName] == nil {
        seen[field.name.canonicalName] = field.name.rawName
    }
    for field in headers {
        guard let spelling = seen[field.name.canonicalName], o[spelling] == nil else { continue }
        let values = headers[values: field.name]
        o[spelling] = values.count == 1 ? .string(values[0]) : .array(values.map { .string($0) })
    }
    return .object(o)
}

func parseHeaders(_ json: JSON?, at path: String) throws(MBaaSError) -> HTTPFields {
    guard let json, !json.isNull else { return [:] }
    guard let o = json.objectValue else { throw CassetteFormatError.at(path, "expected an object of name: value") }
    var headers = HTTPFields()
    for (name, value) in o {
        guard let fieldName = HTTPField.Name(name) else {
            throw CassetteFormatError.at("\(path).\(name)", "not a valid HTTP header name")
        }
        if let s = value.stringValue { headers.append(HTTPField(name: fieldName, value: s)) }
        else if let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) {
            for item in items { headers.append(HTTPField(name: fieldName, value: item.stringValue!)) }
        } else {
            throw CassetteFormatError.at("\(path).\(name)", "expected a string or an array of strings")
        }
    }
    return headers
}
