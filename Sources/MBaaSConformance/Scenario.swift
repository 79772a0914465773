import Foundation
public import MBaaSCore

/// One conformance scenario: a few steps against a backend, each with the outcome the core contracts promise.
///
/// Scenarios are data (`Fixtures/Scenarios/*.json`), not code, so every adapter (and the `mbaas conformance` CLI)
/// runs the same cases. A scenario file is a JSON object `{"scenarios": [ ... ]}`; each scenario is:
///
/// ```json
/// {
///   "id": "objects.crud.basic",
///   "title": "Create, get, update and delete a record",
///   "group": "objects",
///   "requires": ["objects"],
///   "steps": [
///     {"op": "create", "class": "Memo_${run}", "fields": {"title": "rent", "money": 50},
///      "expect": {"fields": {"title": "rent"}, "present": ["$.id", "$.createdAt"]},
///      "capture": {"memoId": "$.id"}},
///     {"op": "get", "class": "Memo_${run}", "id": "${memoId}", "expect": {"fields": {"money": 50}}},
///     {"op": "delete", "class": "Memo_${run}", "id": "${memoId}"},
///     {"op": "get", "class": "Memo_${run}", "id": "${memoId}", "expectError": "notFound"}
///   ],
///   "cleanup": [{"op": "delete", "class": "Memo_${run}", "id": "${memoId}"}]
/// }
/// ```
///
/// - `id` starts with the `group` and a dot; ids are unique in the suite.
/// - `requires` lists ``Capabilities/Feature`` raw values (`files`, `operator.regex`, `value.Date`...). A backend
///   missing any of them skips the scenario with the reason from ``Capabilities/missing(_:)``. The catalog
///   checks that the steps need nothing beyond what is declared (``ScenarioCatalog/validate(_:)``). A feature that
///   states a limit (``Capabilities/Feature/emptyStringsAbsent``) may be required too: the scenario then checks how
///   a backend with that limit behaves, and the scenario it replaces names it in `unless`.
/// - `steps` run in order (see ``Step`` for the step language); the first unmet expectation fails the scenario.
/// - `cleanup` runs afterwards whatever happened (an error other than `notFound` errors a passing scenario), and
///   may only delete records by id (and files
///   the scenario uploaded), the operations every backend that can run the scenario has. A cleanup step that
///   names a variable never captured is left out.
/// - `users` (optional) names **fixture users** the scenario needs, e.g. `["alice", "bob"]`: users that exist
///   before the first step. The runner provides each one before the steps run: a user the caller gave
///   (``FixtureUser``, e.g. from a directory an administrator keeps) is logged in once to learn its id; otherwise, when the
///   backend can sign up users, one is signed up with a generated name. Steps then read `${alice_username}`,
///   `${alice_password}` and `${alice_id}`. Provisioning is setup, not a measured step: a failure other than
///   `duplicate` or `unauthorized` is retried once. A backend that can do neither errors the scenario, naming the user to
///   give.
/// - `unless` (optional): the scenario runs only on backends that do *not* declare those features (a backend
///   declaring one skips it). **Capability probes** use it: their steps use the feature expecting `unsupported`,
///   proving that an undeclared feature is refused rather than approximated. It also states behaviour that
///   holds only without a feature (per-operation batch results without `atomicBatch`).
/// - `actAs` (optional) names one of `users`: the `main` instance logs in as that user before the first step, so
///   objects, queries and files run as an app user (never as an admin or superuser). That is where the backend
///   has users (declares ``Capabilities/Feature/auth``); a backend without users (no `auth`) runs the scenario
///   anonymously, providing no fixture user, unless `requires` lists `auth`. So a data scenario does not list
///   `auth`: its user-acting variant runs where there are users, its anonymous one where there are none. The
///   catalog requires `auth` of a scenario that needs a user for more than `actAs` (other `users`, or their
///   `${alice_id}`-style variables in its steps).
/// - `lossyUnder` (optional): limits (``Capabilities/Feature/emptyStringsAbsent``) under which the scenario's
///   contract is known to be broken. On a backend declaring one, an unmet expectation is ``Outcome/lossy`` (with
///   the limit and the difference) instead of ``Outcome/failed``: a loss reported as a loss, never a skip and never
///   a pass. Errors stay errors, and a backend declaring none of them is held to the contract as usual.
/// - `network` (default `true`): `false` documents a scenario whose steps never reach a server (client-side
///   validation). On replay the fixture kind is measured, not taken from the tag: ``Fixture/none`` when the steps
///   sent no request (fixture-user sign-up and log-in do not count); live runs report such a scenario as `none`.
/// - `${run}` is a per-run unique value of 8 lowercase alphanumerics (generated when running live or recording,
///   read back from the cassette on replay), so class names (`Memo_${run}`) and user names (`u${run}a`) never
///   clash between runs against a shared server.
public struct Scenario: Sendable, Hashable, Identifiable {
    public var id: String
    public var title: String
    public var group: String
    public var requires: [Capabilities.Feature]
    public var steps: [Step]
    public var cleanup: [Step]
    /// Free text: the contract the scenario checks, vendor remarks.
    public var notes: String?
    /// The fixture users the scenario needs (see the type's documentation).
    public var users: [String]
    /// Whether the scenario reaches a server; `false` for client-side checks (reported as ``Fixture/none``).
    public var network: Bool
    /// The fixture user the `main` instance logs in as before the steps, if any.
    public var actAs: String?
    /// Features whose presence skips the scenario (see the type's documentation); empty for most scenarios.
    public var unless: [Capabilities.Feature]
    /// Declared limits under which an unmet expectation is a known loss (``Outcome/lossy``), not a failure.
    public var lossyUnder: [Capabilities.Feature] = []

    public init(
        id: String, title: String, group: String, requires: [Capabilities.Feature] = [], steps: [Step],
        cleanup: [Step] = [], notes: String? = nil, users: [String] = [], network: Bool = true,
        unless: [Capabilities.Feature] = [], actAs: String? = nil
    ) {
        self.actAs = actAs
        self.unless = unless
        self.id = id
        self.title = title
        self.group = group
        self.requires = requires
        self.steps = steps
        self.cleanup = cleanup
        self.notes = notes
        self.users = users
        self.network = network
    }

    /// Whether the scenario runs without a fixture user on `capabilities`: it acts as one (`actAs`) only where
    /// the backend has users, and the backend has none (no ``Capabilities/Feature/auth``).
    public func runsAnonymously(on capabilities: Capabilities) -> Bool {
        actAs != nil && !requires.contains(.auth) && !capabilities.has(.auth)
    }

    /// The backend instance names the steps use (`main` first).
    public var sessionNames: [String] {
        var names = ["main"]
        for step in steps + cleanup where !names.contains(step.session) { names.append(step.session) }
        return names
    }
}

/// One step of a scenario: an operation on a backend, what it must produce, and what to remember.
///
/// ```json
/// {"op": "query", "as": "bob", "class": "Memo_${run}", "where": {"n": {"$gte": 2}}, "order": "-n,title",
///  "limit": 10, "expect": {"ids": ["${b}", "${c}"]}, "capture": {"first": "$.records[0].id"}}
/// ```
///
/// # Operations and their arguments
/// | op | arguments | result document |
/// |---|---|---|
/// | `create` | `class`, `fields`, `acl`? | the record's neutral JSON (`{"class","id","createdAt",...,"fields"}`) |
/// | `get` | `class`, `id` | the record |
/// | `update` | `class`, `id`, `set`?, `unset`?, `increment`?, `add`?, `addUnique`?, `remove`?, `expectedVersion`?, `acl`? | the record |
/// | `delete` | `class`, `id`, `expectedVersion`? | `null` |
/// | `query` | `class`, `where`?, `order`?, `limit`?, `skip`?, `keys`? | `{"records":[...],"nextCursor":..}` |
/// | `queryAll` | `class`, `where`?, `order`?, `limit`?, `pageSize`? | `{"records":[...],"pages":N}` (iterates ``ObjectStore/records(matching:pageSize:)``) |
/// | `count` | `class`, `where`? | `{"count":N}` |
/// | `batch` | `operations`: `[{"create":{class,fields}}, {"update":{class,id,set..}}, {"delete":{class,id}}]` | `{"results":[{"ok":true,"record":..} or {"ok":false,"error":"kind"}]}` |
/// | `upload` | `name`, `text` (`repeat`? times) or `base64`, `contentType`?, `attachment`? (`{class,id,field}`) | the `File` value's neutral JSON |
/// | `download` | `file` (a `File` value) or `name` | `{"size":N,"sha256":"hex","base64":"..","text":".."}` |
/// | `deleteFile` | `file` or `name` | `null` |
/// | `listFiles` | `prefix`?, `limit`? | `{"files":[{"__type":"File",...}]}` |
/// | `signUp` | `username`, `password`, `email`? | the session `{"token","userId","username",...}` |
/// | `logIn` | `username`, `password` | the session |
/// | `logOut` | `confirmWithServer`? (default `false`) | `null` |
/// | `currentUser` | | `{"id","username","email","groups","roles","fields"}` |
/// | `session` | | the session or `null` |
/// | `restoreSession` | `session` (a session document or `null`) | `null` |
/// | `pause` | `ms` (1 to 2000) | `null`: lets server clocks move on (e.g. before a "changed since" query) |
/// | `parallel` | `steps` (step objects without `capture`) | `null`: runs the steps at the same time, then checks each one's `expect`/`expectError` |
///
/// `where` is the neutral query JSON (``QueryPredicate/init(json:path:)``); `order` is `"-n,title"` or
/// `["-n","title"]`; field values are neutral JSON (``Value/init(json:path:)``).
///
/// # Expectations (`expect`)
/// - `fields`: `{name: neutral value}`; each field must be present and equal the value (ints compare exactly
///   with ints, and an int is never equal to a double; a double equals a number of the same value; dates to the
///   millisecond; arrays and objects member by member).
/// - `exactFields`: like `fields`, and the record must hold no other field (no vendor metadata leaking in).
/// - `absentFields`: field names that must not be present.
/// - `present`: JSON paths (`$.id`, `$.records[0].createdAt`) that must exist and not be `null`.
/// - `match`: `{path: neutral value}`, compared as `fields` compares.
/// - `count`: the number of records (`query`, `queryAll`), the count (`count`), files (`listFiles`) or
///   results (`batch`).
/// - `ids` (ordered) / `idSet` (any order): the ids of the records returned.
/// - `minPages`: `queryAll` needed at least this many pages.
/// - `text` / `base64`: the downloaded bytes.
///
/// `expectError` (a kind or a list of acceptable kinds, ``MBaaSError/Kind`` raw values) says the step must throw.
/// `capture` stores values of the result document under names, for `${name}` in later steps: a string that is
/// exactly `${name}` becomes the captured JSON value itself (an object, a number); inside a longer string it is
/// interpolated. `as` names the backend instance (session) the step runs on: `main` by default; any other name
/// is a second instance opened from the same URL and factory (on replay: the same transport), so scenarios with
/// two users are expressible.
public struct Step: Sendable, Hashable {
    /// The operations of the step language.
    public enum Operation: String, Sendable, Hashable, CaseIterable, Codable {
        case create, get, update, delete, query, queryAll, count, batch
        case upload, download, deleteFile, listFiles
        case signUp, logIn, logOut, currentUser, session, restoreSession
        case pause, parallel
    }

    public var operation: Operation
    /// The backend instance the step runs on (`as`); `main` by default.
    public var session: String
    /// Every member of the step object but `op`, `as`, `expect`, `expectError`, `capture`, `note`.
    public var arguments: JSONObject
    public var expect: JSONObject?
    /// The acceptable error kinds when the step must fail; `nil` when it must succeed.
    public var expectError: [MBaaSError.Kind]?
    /// Variable name to JSON path in the result document.
    public var capture: [String: String]
    public var note: String?

    public init(
        _ operation: Operation, session: String = "main", arguments: JSONObject = [:], expect: JSONObject? = nil,
        expectError: [MBaaSError.Kind]? = nil, capture: [String: String] = [:], note: String? = nil
    ) {
        self.operation = operation
        self.session = session
        self.arguments = arguments
        self.expect = expect
        self.expectError = expectError
        self.capture = capture
        self.note = note
    }

    static let controlKeys: Set<String> = ["op", "as", "expect", "expectError", "capture", "note"]
    static let expectationKeys: Set<String> = [
        "fields", "exactFields", "absentFields", "present", "match", "count", "ids", "idSet", "minPages", "text",
        "base64",
    ]
}

// MARK: - JSON

extension Scenario {
    /// Reads a scenario from its JSON form; errors name the scenario, the step and the member at fault.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "a scenario must be a JSON object") }
        guard let id = o["id"]?.stringValue, !id.isEmpty else {
            throw MBaaSError(.invalidRequest, "scenario without a string 'id': \(json.printed().prefix(80))")
        }
        func fail(_ message: String) -> MBaaSError { MBaaSError(.invalidRequest, "scenario '\(id)': \(message)") }
        guard let title = o["title"]?.stringValue else { throw fail("'title' must be a string") }
        guard let group = o["group"]?.stringValue, !group.isEmpty else { throw fail("'group' must be a string") }
        func features(_ key: String) throws(MBaaSError) -> [Capabilities.Feature] {
            guard let r = o[key] else { return [] }
            guard let items = r.arrayValue else { throw fail("'\(key)' must be an array of feature names") }
            var out: [Capabilities.Feature] = []
            for item in items {
                guard let s = item.stringValue else { throw fail("'\(key)' must hold strings, got \(item)") }
                out.append(Capabilities.Feature(rawValue: s))
            }
            return out
        }
        let requires = try features("requires")
        let unless = try features("unless")

        func steps(_ key: String) throws(MBaaSError) -> [Step] {
            guard let value = o[key] else { return [] }
            guard let items = value.arrayValue else { throw fail("'\(key)' must be an array of steps") }
            var out: [Step] = []
            for (i, item) in items.enumerated() {
                do { out.append(try Step(json: item)) } catch { throw fail("\(key)[\(i)]: \(error.message)") }
            }
            return out
        }
        let known: Set<String> = [
            "id", "title", "group", "requires", "steps", "cleanup", "notes", "users", "network", "unless", "actAs",
            "lossyUnder",
        ]
        if let unknown = o.keys.first(where: { !known.contains($0) }) { throw fail("unknown member '\(unknown)'") }
        var users: [String] = []
        if let u = o["users"] {
            guard let items = u.arrayValue else { throw fail("'users' must be an array of fixture user names") }
            for item in items {
                guard let name = item.stringValue, Template.isValidName(name), !name.contains("_") else {
                    throw fail("'users' must hold names of letters and digits, got \(item)")
                }
                guard !users.contains(name) else { throw fail("fixture user '\(name)' is named twice") }
                users.append(name)
            }
        }
        var actAs: String?
        if let a = o["actAs"] {
            guard let name = a.stringValue, users.contains(name) else {
                throw fail("'actAs' must name one of the scenario's 'users'")
            }
            actAs = name
        }
        var network = true
        if let n = o["network"] {
            guard case .bool(let b) = n else { throw fail("'network' must be true or false") }
            network = b
        }
        self.init(
            id: id, title: title, group: group, requires: requires, steps: try steps("steps"),
            cleanup: try steps("cleanup"), notes: o["notes"]?.stringValue, users: users, network: network,
            unless: unless, actAs: actAs)
        self.lossyUnder = try features("lossyUnder")
        if self.steps.isEmpty { throw fail("has no steps") }
    }

    /// The JSON form, as scenario files hold it.
    public var json: JSON {
        var o: JSONObject = [
            "id": .string(id), "title": .string(title), "group": .string(group),
            "requires": .array(requires.map { .string($0.rawValue) }),
            "steps": .array(steps.map(\.json)),
        ]
        if !cleanup.isEmpty { o["cleanup"] = .array(cleanup.map(\.json)) }
        if let notes { o["notes"] = .string(notes) }
        if !users.isEmpty { o["users"] = .array(users.map(JSON.string)) }
        if !network { o["network"] = .bool(false) }
        if let actAs { o["actAs"] = .string(actAs) }
        if !unless.isEmpty { o["unless"] = .array(unless.map { .string($0.rawValue) }) }
        if !lossyUnder.isEmpty { o["lossyUnder"] = .array(lossyUnder.map { .string($0.rawValue) }) }
        return .object(o)
    }
}

extension Step {
    /// Reads a step from its JSON form.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "a step must be a JSON object") }
        guard let opName = o["op"]?.stringValue else { throw MBaaSError(.invalidRequest, "a step needs a string 'op'") }
        guard let op = Operation(rawValue: opName) else {
            throw MBaaSError(.invalidRequest, "unknown op '\(opName)' (known: \(Operation.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        var session = "main"
        if let a = o["as"] {
            guard let s = a.stringValue, !s.isEmpty else { throw MBaaSError(.invalidRequest, "'as' must be a non-empty string") }
            session = s
        }
        var expect: JSONObject?
        if let e = o["expect"] {
            guard let eo = e.objectValue else { throw MBaaSError(.invalidRequest, "'expect' must be an object") }
            if let unknown = eo.keys.first(where: { !Step.expectationKeys.contains($0) }) {
                throw MBaaSError(.invalidRequest, "unknown expectation '\(unknown)' (known: \(Step.expectationKeys.sorted().joined(separator: ", ")))")
            }
            expect = eo
        }
        var expectError: [MBaaSError.Kind]?
        if let e = o["expectError"] {
            let names: [JSON] = e.arrayValue ?? [e]
            var kinds: [MBaaSError.Kind] = []
            for n in names {
                guard let s = n.stringValue, let k = MBaaSError.Kind.allCases.first(where: { $0.rawValue == s }) else {
                    throw MBaaSError(.invalidRequest, "'expectError' must name error kinds (\(MBaaSError.Kind.allCases.map(\.rawValue).joined(separator: ", "))), got \(n)")
                }
                kinds.append(k)
            }
            guard !kinds.isEmpty else { throw MBaaSError(.invalidRequest, "'expectError' is empty") }
            expectError = kinds
        }
        if expect != nil, expectError != nil {
            throw MBaaSError(.invalidRequest, "a step has either 'expect' or 'expectError', not both")
        }
        var capture: [String: String] = [:]
        if let c = o["capture"] {
            guard let co = c.objectValue else { throw MBaaSError(.invalidRequest, "'capture' must be an object of name: path") }
            for (name, path) in co {
                guard let p = path.stringValue, p.hasPrefix("$") else {
                    throw MBaaSError(.invalidRequest, "capture '\(name)' must be a JSON path starting with '$'")
                }
                guard Template.isValidName(name) else {
                    throw MBaaSError(.invalidRequest, "capture name '\(name)' must be letters, digits and '_'")
                }
                capture[name] = p
            }
        }
        if expectError != nil, !capture.isEmpty {
            throw MBaaSError(.invalidRequest, "a step expecting an error cannot capture")
        }
        var arguments = JSONObject()
        for (k, v) in o where !Step.controlKeys.contains(k) { arguments[k] = v }
        self.init(op, session: session, arguments: arguments, expect: expect, expectError: expectError,
                  capture: capture, note: o["note"]?.stringValue)
    }

    /// The JSON form.
    public var json: JSON {
        var o: JSONObject = ["op": .string(operation.rawValue)]
        if session != "main" { o["as"] = .string(session) }
        for (k, v) in arguments { o[k] = v }
        if let expect { o["expect"] = .object(expect) }
        if let expectError {
            o["expectError"] = expectError.count == 1 ? .string(expectError[0].rawValue)
                : .array(expectError.map { .string($0.rawValue) })
        }
        if !capture.isEmpty { o["capture"] = .object(JSONObject(sorting: capture.mapValues(JSON.string))) }
        if let note { o["note"] = .string(note) }
        return .object(o)
    }
}
