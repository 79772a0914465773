public import Foundation
public import MBaaSCore

/// Loads and checks scenario files.
public enum ScenarioCatalog {
    /// Loads every `*.json` file of a directory (sorted by name), each `{"scenarios":[...]}`, and validates the
    /// whole set (``validate(_:)``). Errors name the file and the scenario at fault.
    public static func load(directory: URL) throws -> [Scenario] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory.path) } catch {
            throw MBaaSError(.invalidRequest, "cannot list scenarios in \(directory.path): \(MBaaSError.describe(error))")
        }
        var scenarios: [Scenario] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let url = directory.appendingPathComponent(name)
            scenarios += try load(file: url)
        }
        guard !scenarios.isEmpty else { throw MBaaSError(.invalidRequest, "no scenarios in \(directory.path)") }
        try validate(scenarios)
        return scenarios
    }

    /// Loads one scenario file (without cross-file validation).
    public static func load(file url: URL) throws -> [Scenario] {
        let json: JSON
        do { json = try JSON.parse(try Data(contentsOf: url)) } catch {
            throw MBaaSError(.invalidRequest, "\(url.lastPathComponent): \(error)")
        }
        guard let items = json["scenarios"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "\(url.lastPathComponent): expected {\"scenarios\": [...]}")
        }
        var out: [Scenario] = []
        for item in items {
            do { out.append(try Scenario(json: item)) } catch {
                throw MBaaSError(.invalidRequest, "\(url.lastPathComponent): \(error.message)")
            }
        }
        return out
    }

    /// Checks what JSON parsing cannot:
    /// - ids are unique and start with `<group>.`;
    /// - class names (after `${run}`) are `[A-Za-z][A-Za-z0-9_]*`, except in steps that expect an error;
    /// - cleanup only deletes records by id (and files, in scenarios that require files);
    /// - every variable is captured before it is used (`run` is always defined);
    /// - `requires` declares every capability the steps need (``derivedRequirements(of:)``), `auth` included when
    ///   a fixture user is needed for more than `actAs`;
    /// - `lossyUnder` shares no feature with `requires` or `unless`.
    public static func validate(_ scenarios: [Scenario]) throws {
        var seen: Set<String> = []
        var problems: [String] = []
        for s in scenarios {
            func problem(_ m: String) { problems.append("\(s.id): \(m)") }
            if !seen.insert(s.id).inserted { problem("duplicate id") }
            if !s.id.hasPrefix(s.group + ".") { problem("id must start with its group '\(s.group).'") }
            let declared = Set(s.requires)
            let missing = derivedRequirements(of: s).subtracting(declared).subtracting(s.unless)
            if !s.unless.isEmpty, !declared.isDisjoint(with: s.unless) {
                problem("'unless' and 'requires' share a feature")
            }
            if !s.lossyUnder.isEmpty, !Set(s.lossyUnder).isDisjoint(with: declared.union(s.unless)) {
                problem("'lossyUnder' shares a feature with 'requires' or 'unless'")
            }
            if !missing.isEmpty {
                problem("steps need capabilities not in 'requires': \(missing.map(\.rawValue).sorted().joined(separator: ", "))")
            }
            var defined: Set<String> = ["run"]
            for name in s.users { defined.formUnion([name + "_username", name + "_password", name + "_id"]) }
            for (i, step) in s.steps.enumerated() where step.operation == .parallel {
                guard let items = step.arguments["steps"]?.arrayValue, !items.isEmpty else {
                    problem("steps[\(i)]: parallel needs a non-empty 'steps' array"); continue
                }
                for (j, item) in items.enumerated() {
                    do {
                        let sub = try Step(json: item)
                        if sub.operation == .parallel || sub.operation == .pause || !sub.capture.isEmpty {
                            problem("steps[\(i)].steps[\(j)]: a parallel sub-step cannot nest, pause or capture")
                        }
                    } catch { problem("steps[\(i)].steps[\(j)]: \(error.message)") }
                }
            }
            for (i, step) in s.steps.enumerated() {
                let undefined = Template.references(in: .object(step.arguments))
                    .union(step.expect.map { Template.references(in: .object($0)) } ?? [])
                    .subtracting(defined)
                if !undefined.isEmpty { problem("steps[\(i)] uses \(undefined.sorted().map { "${\($0)}" }.joined(separator: ", ")) before it is captured") }
                defined.formUnion(step.capture.keys)
                if step.expectError == nil, let c = step.arguments["class"]?.stringValue, !isValidClassName(c) {
                    problem("steps[\(i)]: class name '\(c)' is not [A-Za-z][A-Za-z0-9_]*")
                }
            }
            for (i, step) in s.cleanup.enumerated() {
                switch step.operation {
                case .delete: break
                case .deleteFile where declared.contains(.files) || declared.contains(.fileAttachment): break
                default: problem("cleanup[\(i)]: only 'delete' (and 'deleteFile' when files are required) may clean up")
                }
                if step.expect != nil || step.expectError != nil { problem("cleanup[\(i)] cannot have expectations") }
            }
        }
        if !problems.isEmpty {
            throw MBaaSError(.invalidRequest, "invalid scenarios:\n  " + problems.joined(separator: "\n  "))
        }
    }

    /// `[A-Za-z][A-Za-z0-9_]*` once `${run}` (8 lowercase alphanumerics) is substituted.
    static func isValidClassName(_ name: String) -> Bool {
        let concrete = name.replacingOccurrences(of: "${run}", with: "abcd1234")
        guard let first = concrete.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return concrete.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
        }
    }

    /// The capabilities a scenario's steps use, as far as can be told before running them: the operations,
    /// query operators, sort keys, skip, keys, field operations, version checks, ACLs and value types.
    public static func derivedRequirements(of scenario: Scenario) -> Set<Capabilities.Feature> {
        var needs: Set<Capabilities.Feature> = []
        let cleanupSteps = scenario.cleanup
        var all: [Step] = []
        for step in scenario.steps + scenario.cleanup {
            all.append(step)
            if step.operation == .parallel {
                for item in step.arguments["steps"]?.arrayValue ?? [] { if let sub = try? Step(json: item) { all.append(sub) } }
            }
        }
        for step in all {
            let a = step.arguments
            switch step.operation {
            case .create, .get, .update, .delete, .query, .queryAll: needs.insert(.objects)
            case .count: needs.formUnion([.objects, .count])
            case .batch: needs.formUnion([.objects, .batch])
            case .upload: needs.insert(a["attachment"] == nil ? .files : .fileAttachment)
            case .download, .deleteFile:
                if !scenario.requires.contains(.files) && !scenario.requires.contains(.fileAttachment) { needs.insert(.files) }
                // A deletion the scenario checks needs it; one in the cleanup is skipped where the backend cannot.
                if step.operation == .deleteFile, !cleanupSteps.contains(where: { $0 == step }) { needs.insert(.fileDelete) }
            case .listFiles: needs.formUnion([.files, .fileList])
            case .signUp: needs.insert(.signUp)
            case .logIn, .currentUser: needs.insert(.auth)
            case .logOut:
                needs.insert(.auth)
                if a["confirmWithServer"]?.boolValue == true { needs.insert(.serverLogout) }
            case .session, .restoreSession, .pause, .parallel: break
            }
            // A fixture user's variables need the user, so a backend with users: `actAs` alone does not.
            let userVariables = scenario.users.flatMap { [$0 + "_username", $0 + "_password", $0 + "_id"] }
            let used = Template.references(in: .object(a)).union(step.expect.map { Template.references(in: .object($0)) } ?? [])
            if !used.isDisjoint(with: userVariables) { needs.insert(.auth) }
            if a["expectedVersion"] != nil { needs.insert(.optimisticLocking) }
            if a["acl"] != nil { needs.insert(.acl) }
            for k in ["increment", "add", "addUnique", "remove"] where a[k] != nil { needs.insert(.fieldOperations) }
            if let w = a["where"], let p = try? QueryPredicate(json: placeholderValues(w)) {
                for op in p.operators { needs.insert(.operator(op)) }
                if p.keys.contains(where: { $0.contains(".") }) { needs.insert(.nestedKeys) }
                for v in operands(of: p) {
                    let types = valueTypes(in: v.json)
                    needs.formUnion(types)
                    for t in types where !["value.array", "value.object"].contains(t.rawValue) {
                        needs.insert(.queryValue(String(t.rawValue.dropFirst("value.".count))))
                    }
                }
            }
            if let order = a["order"] {
                let count = order.stringValue.map { SortKey.list($0).count } ?? order.arrayValue?.count ?? 0
                if count > 1 { needs.insert(.multiKeySort) }
            }
            if let skip = a["skip"]?.intValue, skip > 0 { needs.insert(.skip) }
            if a["keys"] != nil { needs.insert(.selectKeys) }
            for k in ["fields", "set"] {
                if let f = a[k]?.objectValue {
                    for (_, v) in f { needs.formUnion(valueTypes(in: placeholderValues(v))) }
                }
            }
            if let ops = a["operations"]?.arrayValue {
                for op in ops {
                    for (_, body) in op.objectValue ?? [:] {
                        for k in ["fields", "set"] {
                            for (_, v) in body[k]?.objectValue ?? [:] { needs.formUnion(valueTypes(in: placeholderValues(v))) }
                        }
                    }
                }
            }
        }
        if scenario.users.contains(where: { $0 != scenario.actAs }) { needs.insert(.auth) }
        return needs
    }

    /// The `value.<Type>` features a neutral JSON value needs; strings, numbers and booleans need none.
    static func valueTypes(in json: JSON) -> Set<Capabilities.Feature> {
        guard let value = try? Value(json: json) else { return [] }
        var out: Set<Capabilities.Feature> = []
        func walk(_ v: Value) {
            switch v {
            case .string, .int, .double, .bool: return
            case .array(let items):
                out.insert(.valueType(v.typeName))
                items.forEach(walk)
            case .object(let o):
                out.insert(.valueType(v.typeName))
                o.values.forEach(walk)
            default: out.insert(.valueType(v.typeName))
            }
        }
        walk(value)
        return out
    }

    /// The values a predicate compares with.
    private static func operands(of p: QueryPredicate) -> [Value] {
        switch p {
        case .compare(_, _, let v): [v]
        case .in(_, let vs), .notIn(_, let vs), .containsAll(_, let vs): vs
        case .exists, .prefix, .regex: []
        case .and(let ps), .or(let ps): ps.flatMap(operands)
        case .not(let q): operands(of: q)
        }
    }

    /// Replaces `${x}` references with a plain string so the structure can be inspected before running.
    private static func placeholderValues(_ json: JSON) -> JSON {
        (try? Template.substitute(json, Dictionary(uniqueKeysWithValues: Template.references(in: json).map {
            ($0, JSON.string("x"))
        }))) ?? json
    }
}
