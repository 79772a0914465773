public import Foundation
public import MBaaSCore
public import MBaaSParseFamilyWire

// The JSON messages of the Parse REST API, each with `json` (encode) and `init(json:)` (decode).

/// The response to a create (`201`): `{"createdAt":"…","objectId":"…"}`; a sign-up adds `sessionToken`.
public struct ParseCreated: Sendable, Hashable {
    public var objectId: String
    public var createdAt: Date
    /// Any other members (`sessionToken`, …), in order.
    public var extras: JSONObject

    public init(objectId: String, createdAt: Date, extras: JSONObject = [:]) {
        self.objectId = objectId
        self.createdAt = createdAt
        self.extras = extras
    }

    public var json: JSON {
        var o: JSONObject = ["createdAt": .string(ISO8601.format(createdAt)), "objectId": .string(objectId)]
        for (k, v) in extras { o[k] = v }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "create response is not an object") }
        guard let id = o["objectId"]?.stringValue else { throw MBaaSError(.decoding, "create response without objectId") }
        guard let date = try ParseCodec.date(o["createdAt"] ?? .null, "createdAt") else {
            throw MBaaSError(.decoding, "create response without createdAt")
        }
        var extras = o
        extras["objectId"] = nil
        extras["createdAt"] = nil
        self.init(objectId: id, createdAt: date, extras: extras)
    }
}

/// The response to an update (`200`): `{"updatedAt":"…"}` plus the resulting value of each `__op` field.
public struct ParseUpdated: Sendable, Hashable {
    public var updatedAt: Date
    public var extras: JSONObject

    public init(updatedAt: Date, extras: JSONObject = [:]) {
        self.updatedAt = updatedAt
        self.extras = extras
    }

    public var json: JSON {
        var o = extras
        o["updatedAt"] = .string(ISO8601.format(updatedAt))
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard var o = json.objectValue, let date = try ParseCodec.date(o["updatedAt"] ?? .null, "updatedAt") else {
            throw MBaaSError(.decoding, "update response without updatedAt")
        }
        o["updatedAt"] = nil
        self.init(updatedAt: date, extras: o)
    }
}

/// The response to a find: `{"results":[…]}` plus `"count":N` when `count=1` was asked.
/// The Parse family's one results message (``MBaaSParseFamilyWire/ParseFamilyResults``).
public typealias ParseResults = ParseFamilyResults

/// The response to a file upload (`201`, `Location` = the url): `{"url":"…","name":"<prefix>_<name>"}`.
public struct ParseFileCreated: Sendable, Hashable {
    public var name: String
    public var url: String

    public init(name: String, url: String) {
        self.name = name
        self.url = url
    }

    public var json: JSON { .object(["url": .string(url), "name": .string(name)]) }

    public init(json: JSON) throws(MBaaSError) {
        guard let name = json["name"]?.stringValue, let url = json["url"]?.stringValue else {
            throw MBaaSError(.decoding, "file upload response without name and url")
        }
        self.init(name: name, url: url)
    }
}

/// `POST /login` body: `{"username":"…","password":"…"}`.
public struct ParseLoginRequest: Sendable, Hashable {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    public var json: JSON { .object(["username": .string(username), "password": .string(password)]) }

    /// Reads a login body (server side): a missing user name is code 200, a missing password 201.
    public init(json: JSON) throws(MBaaSError) {
        guard let username = json["username"]?.stringValue, !username.isEmpty else {
            throw MBaaSError(.invalidRequest, "username is required.", vendorCode: "200", httpStatus: 400)
        }
        guard let password = json["password"]?.stringValue, !password.isEmpty else {
            throw MBaaSError(.invalidRequest, "password is required.", vendorCode: "201", httpStatus: 400)
        }
        self.init(username: username, password: password)
    }
}

/// A user object as `/login`, `/users/me` and `/users/{id}` return it (``ParseFamilyUserObject``).
public typealias ParseUserObject = ParseFamilyUserObject<ParseWire>

// MARK: Batch

/// `POST /batch`: `{"requests":[{"method","path","body"}…]}`. Paths carry the mount prefix (`/parse/classes/…`).
public struct ParseBatchRequest: Sendable, Hashable {
    public struct Item: Sendable, Hashable {
        public var method: String
        public var path: String
        public var body: JSONObject?

        public init(method: String, path: String, body: JSONObject? = nil) {
            self.method = method
            self.path = path
            self.body = body
        }

        public var json: JSON {
            var o: JSONObject = ["method": .string(method), "path": .string(path)]
            if let body { o["body"] = .object(body) }
            return .object(o)
        }
    }

    public var requests: [Item]

    public init(requests: [Item]) { self.requests = requests }

    public var json: JSON { .object(["requests": .array(requests.map(\.json))]) }

    /// Reads a batch body (server side); `requests` must be an array (107 "requests must be an array").
    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["requests"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "requests must be an array", vendorCode: "107", httpStatus: 400)
        }
        var out: [Item] = []
        for item in items {
            guard let method = item["method"]?.stringValue, let path = item["path"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "a batch request needs a method and a path", vendorCode: "107", httpStatus: 400)
            }
            out.append(Item(method: method.uppercased(), path: path, body: item["body"]?.objectValue))
        }
        self.init(requests: out)
    }
}

/// The `/batch` answer: HTTP 200 with one item per request, `{"success":…}` or `{"error":{"code","error"}}`.
public struct ParseBatchResponse: Sendable, Hashable {
    public enum Item: Sendable, Hashable {
        case success(JSON)
        case error(ParseErrorBody)

        public var json: JSON {
            switch self {
            case .success(let body): .object(["success": body])
            case .error(let e): .object(["error": e.json])
            }
        }
    }

    public var items: [Item]

    public init(items: [Item]) { self.items = items }

    public var json: JSON { .array(items.map(\.json)) }

    public init(json: JSON) throws(MBaaSError) {
        guard let array = json.arrayValue else { throw MBaaSError(.decoding, "batch response is not an array") }
        var out: [Item] = []
        for entry in array {
            if let success = entry["success"] {
                out.append(.success(success))
            } else if let e = entry["error"], let body = ParseErrorBody(json: e) {
                out.append(.error(body))
            } else {
                throw MBaaSError(.decoding, "batch response item has neither 'success' nor 'error'")
            }
        }
        self.init(items: out)
    }
}
