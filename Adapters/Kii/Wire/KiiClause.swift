public import MBaaSCore

/// A point in Kii's GeoPoint wire shape `{"_type":"point","lat":35.6,"lon":139.7}` (kii.md §3.4).
public struct KiiGeoPoint: Sendable, Hashable {
    public var lat: Double
    public var lon: Double
    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    public var json: JSON { .object(["_type": "point", "lat": .double(lat), "lon": .double(lon)]) }

    /// Reads the wire shape; `nil` for anything else.
    public init?(json: JSON) {
        guard let o = json.objectValue, o["_type"]?.stringValue == "point", let lat = o["lat"]?.doubleValue,
              let lon = o["lon"]?.doubleValue, o.count == 3
        else { return nil }
        self.init(lat: lat, lon: lon)
    }
}

/// The value types Kii's `hasField` clause tests (kii.md §4.2).
public enum KiiFieldType: String, Sendable, Hashable, CaseIterable {
    case string = "STRING", integer = "INTEGER", decimal = "DECIMAL", boolean = "BOOLEAN"
}

/// One bound of a `range` clause.
public struct KiiRangeBound: Sendable, Hashable {
    public var limit: JSON
    public var included: Bool
    public init(_ limit: JSON, included: Bool) {
        self.limit = limit
        self.included = included
    }
}

/// A Kii query clause, exactly as on the wire (kii.md §4.2).
///
/// ``json`` prints the wire JSON and ``init(json:)`` reads it back (for a server or emulator); both are pure.
public indirect enum KiiClause: Sendable, Hashable {
    /// `{"type":"all"}`
    case all
    /// `{"type":"eq","field":..,"value":..}`
    case eq(field: String, value: JSON)
    /// `{"type":"not","clause":{..}}`
    case not(KiiClause)
    /// `{"type":"and","clauses":[..]}`
    case and([KiiClause])
    /// `{"type":"or","clauses":[..]}`
    case or([KiiClause])
    /// `{"type":"range","field":..,"lowerLimit":..,"lowerIncluded":..,"upperLimit":..,"upperIncluded":..}`
    case range(field: String, lower: KiiRangeBound?, upper: KiiRangeBound?)
    /// `{"type":"in","field":..,"values":[..]}`
    case `in`(field: String, values: [JSON])
    /// `{"type":"prefix","field":..,"prefix":..}`
    case prefix(field: String, prefix: String)
    /// `{"type":"hasField","field":..,"fieldType":"STRING"}`
    case hasField(field: String, type: KiiFieldType)
    /// `{"type":"geobox","field":..,"box":{"ne":point,"sw":point}}`
    case geoBox(field: String, northEast: KiiGeoPoint, southWest: KiiGeoPoint)
    /// `{"type":"geodistance","field":..,"center":point,"radius":metres,"putDistanceInto":..}`
    case geoDistance(field: String, center: KiiGeoPoint, radius: Double, putDistanceInto: String?)

    /// The wire JSON.
    public var json: JSON {
        switch self {
        case .all:
            return .object(["type": "all"])
        case .eq(let field, let value):
            return .object(["type": "eq", "field": .string(field), "value": value])
        case .not(let clause):
            return .object(["type": "not", "clause": clause.json])
        case .and(let clauses):
            return .object(["type": "and", "clauses": .array(clauses.map(\.json))])
        case .or(let clauses):
            return .object(["type": "or", "clauses": .array(clauses.map(\.json))])
        case .range(let field, let lower, let upper):
            var o: JSONObject = ["type": "range", "field": .string(field)]
            if let lower {
                o["lowerLimit"] = lower.limit
                o["lowerIncluded"] = .bool(lower.included)
            }
            if let upper {
                o["upperLimit"] = upper.limit
                o["upperIncluded"] = .bool(upper.included)
            }
            return .object(o)
        case .in(let field, let values):
            return .object(["type": "in", "field": .string(field), "values": .array(values)])
        case .prefix(let field, let prefix):
            return .object(["type": "prefix", "field": .string(field), "prefix": .string(prefix)])
        case .hasField(let field, let type):
            return .object(["type": "hasField", "field": .string(field), "fieldType": .string(type.rawValue)])
        case .geoBox(let field, let ne, let sw):
            return .object(["type": "geobox", "field": .string(field), "box": .object(["ne": ne.json, "sw": sw.json])])
        case .geoDistance(let field, let center, let radius, let into):
            var o: JSONObject = ["type": "geodistance", "field": .string(field), "center": center.json,
                                 "radius": .double(radius)]
            if let into { o["putDistanceInto"] = .string(into) }
            return .object(o)
        }
    }

    /// Reads a clause from its wire JSON. Malformed clauses are ``MBaaSError/Kind/invalidRequest`` naming the path,
    /// with the vendor code `QUERY_NOT_SUPPORTED` a Kii server would answer (kii.md §4.3).
    public init(json: JSON, path: String = "clause") throws(MBaaSError) {
        func bad(_ why: String) -> MBaaSError {
            MBaaSError(.invalidRequest, "\(path): \(why)", vendorCode: "QUERY_NOT_SUPPORTED", httpStatus: 400)
        }
        guard let o = json.objectValue, let type = o["type"]?.stringValue else {
            throw bad("a clause is an object with a string 'type'")
        }
        func field() throws(MBaaSError) -> String {
            guard let f = o["field"]?.stringValue, !f.isEmpty else { throw bad("'\(type)' needs a string 'field'") }
            return f
        }
        func point(_ j: JSON?, _ name: String) throws(MBaaSError) -> KiiGeoPoint {
            guard let j, let p = KiiGeoPoint(json: j) else { throw bad("'\(name)' must be {\"_type\":\"point\",\"lat\":..,\"lon\":..}") }
            return p
        }
        func children() throws(MBaaSError) -> [KiiClause] {
            guard let items = o["clauses"]?.arrayValue, !items.isEmpty else {
                throw bad("'\(type)' needs a non-empty 'clauses' array")
            }
            var out: [KiiClause] = []
            for (i, item) in items.enumerated() { out.append(try KiiClause(json: item, path: "\(path).clauses[\(i)]")) }
            return out
        }
        switch type {
        case "all":
            self = .all
        case "eq":
            guard let v = o["value"] else { throw bad("'eq' needs a 'value'") }
            self = .eq(field: try field(), value: v)
        case "not":
            guard let c = o["clause"] else { throw bad("'not' needs a 'clause'") }
            self = .not(try KiiClause(json: c, path: "\(path).clause"))
        case "and":
            self = .and(try children())
        case "or":
            self = .or(try children())
        case "range":
            let f = try field()
            func bound(_ limit: String, _ included: String) throws(MBaaSError) -> KiiRangeBound? {
                guard let l = o[limit] else { return nil }
                if let inc = o[included], inc.boolValue == nil { throw bad("'\(included)' must be a boolean") }
                // Kii includes the bound unless told otherwise.
                return KiiRangeBound(l, included: o[included]?.boolValue ?? true)
            }
            let lower = try bound("lowerLimit", "lowerIncluded"), upper = try bound("upperLimit", "upperIncluded")
            guard lower != nil || upper != nil else { throw bad("'range' needs 'lowerLimit' or 'upperLimit'") }
            self = .range(field: f, lower: lower, upper: upper)
        case "in":
            guard let values = o["values"]?.arrayValue else { throw bad("'in' needs a 'values' array") }
            self = .in(field: try field(), values: values)
        case "prefix":
            guard let p = o["prefix"]?.stringValue else { throw bad("'prefix' needs a string 'prefix'") }
            self = .prefix(field: try field(), prefix: p)
        case "hasField":
            guard let t = o["fieldType"]?.stringValue, let ft = KiiFieldType(rawValue: t) else {
                throw bad("'hasField' needs 'fieldType' STRING, INTEGER, DECIMAL or BOOLEAN")
            }
            self = .hasField(field: try field(), type: ft)
        case "geobox":
            guard let box = o["box"] else { throw bad("'geobox' needs a 'box'") }
            self = .geoBox(field: try field(), northEast: try point(box["ne"], "box.ne"), southWest: try point(box["sw"], "box.sw"))
        case "geodistance":
            guard let r = o["radius"]?.doubleValue, r > 0, r <= 20_000_000 else {
                throw bad("'geodistance' needs a 'radius' in metres within (0, 20000000]")
            }
            self = .geoDistance(field: try field(), center: try point(o["center"], "center"), radius: r,
                                putDistanceInto: o["putDistanceInto"]?.stringValue)
        default:
            throw bad("unknown clause type '\(type)'")
        }
    }
}
