import Crypto
import Foundation
import MBaaSCore

/// Why a step did not go as the scenario says.
enum StepProblem: Error {
    /// The backend did something the contract forbids: the scenario fails.
    case failed(String)
    /// The harness could not carry the step out (bad arguments, unexpected error): the scenario errors.
    case errored(String)
}

/// The backend instances of one scenario run, opened lazily by name (`main`, `alice`, ...).
struct BackendPool: Sendable {
    let open: @Sendable () async throws -> any Backend
    private(set) var instances: [String: any Backend] = [:]
    private(set) var order: [String] = []

    init(open: @escaping @Sendable () async throws -> any Backend) { self.open = open }

    mutating func backend(_ name: String) async throws -> any Backend {
        if let b = instances[name] { return b }
        let b = try await open()
        instances[name] = b
        order.append(name)
        return b
    }

    /// An instance already opened (``backend(_:)`` first).
    func instance(_ name: String) throws -> any Backend {
        guard let b = instances[name] else { throw MBaaSError(.internal, "backend instance '\(name)' was not opened") }
        return b
    }

    func closeAll() async {
        for name in order { await instances[name]?.close() }
    }
}

/// Carries out steps of the scenario language against backends and checks their expectations.
struct StepInterpreter: Sendable {
    var pool: BackendPool
    var variables: [String: JSON]

    /// Runs one step; throws ``StepProblem`` when it does not do what the scenario says. An error of a kind in
    /// `tolerating` counts as done (cleanup tolerates `notFound`: the steps may have deleted the record already).
    mutating func run(_ step: Step, label: String, tolerating: [MBaaSError.Kind] = []) async throws(StepProblem) {
        let args: JSONObject
        let expect: JSONObject?
        do {
            args = try Template.substitute(step.arguments, variables)
            expect = try step.expect.map { o throws(Template.UndefinedVariable) in try Template.substitute(o, variables) }
        } catch {
            throw .errored("\(label): \(error)")
        }
        if step.operation == .parallel {
            try await runParallel(Arguments(args, label: label), label: label)
            return
        }
        let backend: any Backend
        do { backend = try await pool.backend(step.session) } catch {
            throw .errored("\(label): cannot open backend instance '\(step.session)': \(MBaaSError.wrap(error))")
        }
        let outcome: Result<JSON, any Error>
        do { outcome = .success(try await perform(step.operation, Arguments(args, label: label), on: backend)) } catch {
            outcome = .failure(error)
        }
        try check(step, outcome, expect: expect, label: label, tolerating: tolerating)
    }

    /// Runs the sub-steps of a `parallel` step at the same time (each on its named instance, opened first), then
    /// checks each one's expectations in order. Sub-steps cannot capture, nest or run `pause`.
    private mutating func runParallel(_ a: Arguments, label: String) async throws(StepProblem) {
        guard let items = a.raw["steps"]?.arrayValue, !items.isEmpty else {
            throw a.problem("parallel needs a non-empty 'steps' array")
        }
        var steps: [(Step, JSONObject?)] = []
        for (i, item) in items.enumerated() {
            let step: Step
            do { step = try Step(json: item) } catch { throw a.problem("steps[\(i)]: \(error.message)") }
            guard step.operation != .parallel, step.operation != .pause, step.capture.isEmpty else {
                throw a.problem("steps[\(i)]: a parallel sub-step cannot nest, pause or capture")
            }
            steps.append((step, step.expect))
            do { _ = try await pool.backend(step.session) } catch {
                throw .errored("\(label): cannot open backend instance '\(step.session)': \(MBaaSError.wrap(error))")
            }
        }
        let me = self
        let outcomes = await withTaskGroup(of: (Int, Result<JSON, any Error>).self) { group in
            for (i, (step, _)) in steps.enumerated() {
                group.addTask {
                    do {
                        let backend = try me.pool.instance(step.session)
                        return (i, .success(try await me.perform(step.operation, Arguments(step.arguments, label: "\(label)[\(i)]"), on: backend)))
                    } catch { return (i, .failure(error)) }
                }
            }
            var out = [Result<JSON, any Error>?](repeating: nil, count: steps.count)
            for await (i, r) in group { out[i] = r }
            return out.map { $0! }
        }
        for (i, (step, expect)) in steps.enumerated() {
            try check(step, outcomes[i], expect: expect, label: "\(label)[\(i)]", tolerating: [])
        }
    }

    /// Checks one step's outcome against its `expectError` or `expect`, and captures.
    private mutating func check(
        _ step: Step, _ outcome: Result<JSON, any Error>, expect: JSONObject?, label: String,
        tolerating: [MBaaSError.Kind]
    ) throws(StepProblem) {
        let result: JSON
        switch outcome {
        case .success(let r): result = r
        case .failure(let problem as StepProblem): throw problem
        case .failure(let error):
            let e = MBaaSError.wrap(error)
            if tolerating.contains(e.kind) { return }
            if let kinds = step.expectError {
                if kinds.contains(e.kind) { return }
                throw .failed("\(label): expected error \(Self.describe(kinds)), got \(e)")
            }
            throw .errored("\(label): unexpected error \(e)")
        }
        if let kinds = step.expectError {
            throw .failed("\(label): expected error \(Self.describe(kinds)), but it succeeded with \(Self.summary(result))")
        }
        if let expect {
            do { try Expectations.check(expect, against: result) } catch { throw .failed("\(label): \(error.message)") }
        }
        for (name, path) in step.capture.sorted(by: { $0.key < $1.key }) {
            let value: JSON?
            do { value = try JSONPath.resolve(path, in: result) } catch { throw .errored("\(label): capture \(name): \(error)") }
            guard let value, !value.isNull else {
                throw .failed("\(label): capture \(name): \(path) is missing from \(Self.summary(result))")
            }
            variables[name] = value
        }
    }

    static func describe(_ kinds: [MBaaSError.Kind]) -> String { kinds.map(\.rawValue).joined(separator: " or ") }

    static func summary(_ json: JSON) -> String {
        let text = json.printed([.sortedKeys])
        return text.count > 240 ? String(text.prefix(240)) + "..." : text
    }

    // MARK: Operations

    private func perform(_ op: Step.Operation, _ a: Arguments, on backend: any Backend) async throws -> JSON {
        switch op {
        case .create:
            var record = Record(className: try a.string("class"), fields: try a.fields("fields") ?? [:])
            record.acl = try a.acl("acl")
            return try await backend.create(record).json
        case .get:
            return try await backend.get(className: try a.string("class"), id: try a.string("id")).json
        case .update:
            var changes: [String: FieldOperation] = [:]
            for (k, v) in try a.fields("set") ?? [:] { changes[k] = .set(v) }
            for k in try a.strings("unset") ?? [] { changes[k] = .delete }
            for (k, v) in try a.fields("increment") ?? [:] { changes[k] = .increment(v) }
            for (k, v) in try a.fields("add") ?? [:] { changes[k] = .add(try a.list(v, "add.\(k)")) }
            for (k, v) in try a.fields("addUnique") ?? [:] { changes[k] = .addUnique(try a.list(v, "addUnique.\(k)")) }
            for (k, v) in try a.fields("remove") ?? [:] { changes[k] = .remove(try a.list(v, "remove.\(k)")) }
            let update = RecordUpdate(changes: changes, expectedVersion: try a.optionalString("expectedVersion"),
                                      acl: try a.acl("acl"))
            return try await backend.update(className: try a.string("class"), id: try a.string("id"), update).json
        case .delete:
            try await backend.delete(className: try a.string("class"), id: try a.string("id"),
                                     expectedVersion: try a.optionalString("expectedVersion"))
            return .null
        case .query:
            let page = try await backend.queryPage(try a.query())
            var o: JSONObject = ["records": .array(page.records.map(\.json))]
            o["nextCursor"] = page.nextCursor.map(JSON.string) ?? .null
            if let total = page.totalCount { o["totalCount"] = .int(Int64(total)) }
            return .object(o)
        case .queryAll:
            var iterator = backend.records(matching: try a.query(), pageSize: try a.optionalInt("pageSize"))
                .makeAsyncIterator()
            var records: [JSON] = []
            while let r = try await iterator.next() { records.append(r.json) }
            return .object(["records": .array(records), "pages": .int(Int64(iterator.pagesFetched))])
        case .count:
            return .object(["count": .int(Int64(try await backend.count(try a.query())))])
        case .batch:
            let results = try await backend.batch(try a.batchOperations())
            return .object(["results": .array(results.map { r -> JSON in
                switch r {
                case .success(let record): .object(["ok": true, "record": record.json])
                case .failure(let e):
                    .object(["ok": false, "error": .string(e.kind.rawValue), "message": .string(e.message)])
                }
            })])
        case .upload:
            let data: Data
            if let text = try a.optionalString("text") {
                let times = try a.optionalInt("repeat") ?? 1
                guard (1...(1 << 24)).contains(times) else { throw a.problem("'repeat' must be from 1 to 16777216") }
                data = Data(String(repeating: text, count: times).utf8)
            } else if let b64 = try a.optionalString("base64") {
                guard let d = Data(base64Encoded: b64) else { throw a.problem("'base64' is not valid base64") }
                data = d
            } else {
                throw a.problem("upload needs 'text' or 'base64'")
            }
            var attachment: FileAttachment?
            if let at = try a.object("attachment") {
                let sub = Arguments(at, label: a.label + " attachment")
                attachment = FileAttachment(className: try sub.string("class"), objectId: try sub.string("id"),
                                            field: try sub.string("field"))
            }
            let upload = FileUpload(name: try a.string("name"), source: .data(data),
                                    contentType: try a.optionalString("contentType"), attachment: attachment)
            return Value.file(try await backend.upload(upload)).json
        case .download:
            let data = try await backend.download(try a.file())
            var o: JSONObject = ["size": .int(Int64(data.count)), "base64": .string(data.base64EncodedString()),
                                 "sha256": .string(SHA256.hash(data: data).lowercaseHex)]
            if let text = String(data: data, encoding: .utf8) { o["text"] = .string(text) }
            return .object(o)
        case .deleteFile:
            try await backend.deleteFile(try a.file())
            return .null
        case .listFiles:
            let files = try await backend.listFiles(prefix: try a.optionalString("prefix"), limit: try a.optionalInt("limit"))
            return .object(["files": .array(files.map { info -> JSON in
                var o = Value.file(info.reference).json.objectValue ?? [:]
                if let c = info.createdAt { o["createdAt"] = .string(ISO8601.format(c)) }
                return .object(o)
            })])
        case .signUp:
            return SessionJSON.encode(try await backend.signUp(
                username: try a.string("username"), password: try a.string("password"),
                email: try a.optionalString("email"), fields: try a.fields("fields") ?? [:]))
        case .logIn:
            return SessionJSON.encode(try await backend.logIn(username: try a.string("username"),
                                                              password: try a.string("password")))
        case .logOut:
            try await backend.logOut(confirmWithServer: try a.optionalBool("confirmWithServer") ?? false)
            return .null
        case .currentUser:
            return try await backend.currentUser().json
        case .session:
            return await backend.session.map(SessionJSON.encode) ?? .null
        case .restoreSession:
            guard let s = a.raw["session"] else { throw a.problem("restoreSession needs 'session' (a session or null)") }
            await backend.restore(s.isNull ? nil : try SessionJSON.decode(s, label: a.label))
            return .null
        case .parallel:
            throw a.problem("parallel runs through run(_:label:)")
        case .pause:
            guard let ms = try a.optionalInt("ms") else { throw a.problem("pause needs 'ms'") }
            guard (1...2000).contains(ms) else { throw a.problem("pause needs 'ms' from 1 to 2000, got \(ms)") }
            try await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000)
            return .null
        }
    }
}

/// Typed access to a step's (substituted) arguments; a wrong argument is a harness error naming it.
struct Arguments {
    let raw: JSONObject
    let label: String

    init(_ raw: JSONObject, label: String) {
        self.raw = raw
        self.label = label
    }

    func problem(_ message: String) -> StepProblem { .errored("\(label): \(message)") }

    func string(_ key: String) throws(StepProblem) -> String {
        guard let s = try optionalString(key) else { throw problem("missing string argument '\(key)'") }
        return s
    }

    func optionalString(_ key: String) throws(StepProblem) -> String? {
        guard let v = raw[key], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw problem("'\(key)' must be a string, got \(v)") }
        return s
    }

    func optionalInt(_ key: String) throws(StepProblem) -> Int? {
        guard let v = raw[key], !v.isNull else { return nil }
        guard let i = v.intValue else { throw problem("'\(key)' must be an integer, got \(v)") }
        return Int(i)
    }

    func optionalBool(_ key: String) throws(StepProblem) -> Bool? {
        guard let v = raw[key], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw problem("'\(key)' must be true or false, got \(v)") }
        return b
    }

    func object(_ key: String) throws(StepProblem) -> JSONObject? {
        guard let v = raw[key], !v.isNull else { return nil }
        guard let o = v.objectValue else { throw problem("'\(key)' must be an object, got \(v)") }
        return o
    }

    func strings(_ key: String) throws(StepProblem) -> [String]? {
        guard let v = raw[key], !v.isNull else { return nil }
        guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
            throw problem("'\(key)' must be an array of strings, got \(v)")
        }
        return a.compactMap(\.stringValue)
    }

    /// An object of neutral field values.
    func fields(_ key: String) throws(StepProblem) -> [String: Value]? {
        guard let o = try object(key) else { return nil }
        var out: [String: Value] = [:]
        for (k, v) in o {
            do { out[k] = try Value(json: v, path: "\(key).\(k)") } catch { throw problem(error.message) }
        }
        return out
    }

    func list(_ value: Value, _ what: String) throws(StepProblem) -> [Value] {
        guard let a = value.arrayValue else { throw problem("'\(what)' must be an array") }
        return a
    }

    func acl(_ key: String) throws(StepProblem) -> ACL? {
        guard let v = raw[key], !v.isNull else { return nil }
        do { return try ACL(json: v) } catch { throw problem(error.message) }
    }

    func sort() throws(StepProblem) -> [SortKey] {
        guard let v = raw["order"], !v.isNull else { return [] }
        if let s = v.stringValue { return SortKey.list(s) }
        if let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) {
            return a.compactMap(\.stringValue).map(SortKey.init(parsing:))
        }
        throw problem("'order' must be \"-a,b\" or [\"-a\",\"b\"], got \(v)")
    }

    func query() throws(StepProblem) -> Query {
        var predicate: QueryPredicate?
        if let w = raw["where"], !w.isNull {
            do { predicate = try QueryPredicate(json: w) } catch { throw problem(error.message) }
        }
        return Query(try string("class"), predicate: predicate, sort: try sort(), limit: try optionalInt("limit"),
                     skip: try optionalInt("skip"), keys: try strings("keys"))
    }

    /// `file` (a neutral `File` value) or `name`.
    func file() throws(StepProblem) -> FileReference {
        if let f = raw["file"], !f.isNull {
            guard case .file(let ref)? = try? Value(json: f) else {
                throw problem("'file' must be a File value ({\"__type\":\"File\",\"name\":...}), got \(f)")
            }
            return ref
        }
        return FileReference(name: try string("name"))
    }

    func batchOperations() throws(StepProblem) -> [BatchOperation] {
        guard let items = raw["operations"]?.arrayValue else { throw problem("batch needs an 'operations' array") }
        var ops: [BatchOperation] = []
        for (i, item) in items.enumerated() {
            guard let o = item.objectValue, o.count == 1, let (kind, body) = o.first(where: { _ in true }),
                  let bo = body.objectValue
            else { throw problem("operations[\(i)] must be {\"create\"|\"update\"|\"delete\": {...}}") }
            let sub = Arguments(bo, label: "\(label) operations[\(i)]")
            switch kind {
            case "create":
                var r = Record(className: try sub.string("class"), fields: try sub.fields("fields") ?? [:])
                r.acl = try sub.acl("acl")
                ops.append(.create(r))
            case "update":
                ops.append(.update(className: try sub.string("class"), id: try sub.string("id"),
                                   RecordUpdate(changes: (try sub.fields("set") ?? [:]).mapValues { .set($0) })))
            case "delete":
                ops.append(.delete(className: try sub.string("class"), id: try sub.string("id")))
            default:
                throw problem("operations[\(i)]: unknown batch operation '\(kind)'")
            }
        }
        return ops
    }
}

/// The JSON document of a ``Session`` in scenarios: `{"token","userId","username","expiresAt","refreshToken","extras"}`.
enum SessionJSON {
    static func encode(_ s: Session) -> JSON {
        var o: JSONObject = ["token": .string(s.token), "userId": .string(s.userId)]
        if let u = s.username { o["username"] = .string(u) }
        if let e = s.expiresAt { o["expiresAt"] = .string(ISO8601.format(e)) }
        if let r = s.refreshToken { o["refreshToken"] = .string(r) }
        o["extras"] = .object(JSONObject(sorting: s.extras.mapValues(JSON.string)))
        return .object(o)
    }

    static func decode(_ json: JSON, label: String) throws(StepProblem) -> Session {
        guard let token = json["token"]?.stringValue, let userId = json["userId"]?.stringValue else {
            throw .errored("\(label): a session needs string 'token' and 'userId'")
        }
        var extras: [String: String] = [:]
        for (k, v) in json["extras"]?.objectValue ?? [:] { if let s = v.stringValue { extras[k] = s } }
        return Session(token: token, userId: userId, username: json["username"]?.stringValue,
                       expiresAt: json["expiresAt"]?.stringValue.flatMap(ISO8601.parse),
                       refreshToken: json["refreshToken"]?.stringValue, extras: extras)
    }
}
