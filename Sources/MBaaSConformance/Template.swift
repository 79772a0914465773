import MBaaSCore
import Foundation

/// `${name}` substitution in scenario JSON.
///
/// A string that is exactly `${name}` becomes the variable's JSON value (so a captured object, number or `null`
/// keeps its type); inside a longer string the value is interpolated (strings as they are, anything else as
/// printed JSON). Substitution applies to object keys too (ACLs keyed by a captured user id).
enum Template {
    struct UndefinedVariable: Error, CustomStringConvertible {
        var name: String
        var description: String { "undefined variable ${\(name)}" }
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" }
    }

    static func substitute(_ json: JSON, _ variables: [String: JSON]) throws(UndefinedVariable) -> JSON {
        switch json {
        case .string(let s): return try substitute(string: s, variables)
        case .array(let items):
            var out: [JSON] = []
            for item in items { out.append(try substitute(item, variables)) }
            return .array(out)
        case .object(let o):
            var out = JSONObject()
            for (k, v) in o { out[try interpolate(k, variables)] = try substitute(v, variables) }
            return .object(out)
        default: return json
        }
    }

    static func substitute(_ object: JSONObject, _ variables: [String: JSON]) throws(UndefinedVariable) -> JSONObject {
        try substitute(.object(object), variables).objectValue ?? [:]
    }

    static func substitute(string s: String, _ variables: [String: JSON]) throws(UndefinedVariable) -> JSON {
        if s.hasPrefix("${"), s.hasSuffix("}"), s.count > 3 {
            let name = String(s.dropFirst(2).dropLast())
            if isValidName(name) {
                guard let value = variables[name] else { throw UndefinedVariable(name: name) }
                return value
            }
        }
        return .string(try interpolate(s, variables))
    }

    static func interpolate(_ s: String, _ variables: [String: JSON]) throws(UndefinedVariable) -> String {
        guard s.contains("${") else { return s }
        var out = ""
        var rest = Substring(s)
        while let start = rest.range(of: "${") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                out += rest[start.lowerBound...]
                return out
            }
            let name = String(rest[start.upperBound..<end])
            guard let value = variables[name] else { throw UndefinedVariable(name: name) }
            out += value.stringValue ?? value.printed()
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }

    /// Every variable name a JSON value refers to.
    static func references(in json: JSON) -> Set<String> {
        switch json {
        case .string(let s): return references(in: s)
        case .array(let items): return items.reduce(into: []) { $0.formUnion(references(in: $1)) }
        case .object(let o):
            return o.reduce(into: Set<String>()) { $0.formUnion(references(in: $1.key)); $0.formUnion(references(in: $1.value)) }
        default: return []
        }
    }

    static func references(in s: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(s)
        while let start = rest.range(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
            names.insert(String(rest[start.upperBound..<end]))
            rest = rest[rest.index(after: end)...]
        }
        return names
    }
}

/// A small JSON path: `$`, `$.a.b`, `$.records[0].id`, `$.fields.title`.
enum JSONPath {
    struct Invalid: Error, CustomStringConvertible {
        var path: String
        var description: String { "invalid JSON path '\(path)'" }
    }

    enum Component: Equatable {
        case key(String)
        case index(Int)
    }

    static func parse(_ path: String) throws(Invalid) -> [Component] {
        guard path.hasPrefix("$") else { throw Invalid(path: path) }
        var components: [Component] = []
        var rest = path.dropFirst()
        while !rest.isEmpty {
            if rest.hasPrefix(".") {
                rest = rest.dropFirst()
                let end = rest.firstIndex(where: { $0 == "." || $0 == "[" }) ?? rest.endIndex
                let key = String(rest[..<end])
                guard !key.isEmpty else { throw Invalid(path: path) }
                components.append(.key(key))
                rest = rest[end...]
            } else if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { throw Invalid(path: path) }
                let inner = rest[rest.index(after: rest.startIndex)..<close]
                if let n = Int(inner), n >= 0 {
                    components.append(.index(n))
                } else if inner.count >= 2, inner.first == "'", inner.last == "'" {
                    components.append(.key(String(inner.dropFirst().dropLast())))
                } else {
                    throw Invalid(path: path)
                }
                rest = rest[rest.index(after: close)...]
            } else {
                throw Invalid(path: path)
            }
        }
        return components
    }

    /// The value at the path, or `nil` when a member or index is missing.
    static func resolve(_ path: String, in json: JSON) throws(Invalid) -> JSON? {
        var current = json
        for component in try parse(path) {
            switch component {
            case .key(let k):
                guard let next = current[k] else { return nil }
                current = next
            case .index(let i):
                guard let a = current.arrayValue, i < a.count else { return nil }
                current = a[i]
            }
        }
        return current
    }
}
