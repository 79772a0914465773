import Foundation
import MBaaSCore
import MBaaSNCMBWire

/// The file store on `/files/{name}`: names are keys, bytes and metadata live in the server store.
extension NCMBCall {
    /// Refuses names that could reach outside the file area or that NCMB refuses.
    func checkFileName(_ name: String) throws {
        if name.unicodeScalars.contains(where: { $0.value > 0x7E }) {
            // [capture] UserCommunity #1304: full-width names fail with E403002.
            throw MBaaSError(.forbidden, "Unauthorized operation. (non-ASCII file name)", vendorCode: "E403002")
        }
        if name.isEmpty || name.count > 255 || name == "." || name.contains("..") || name.contains("/") || name.contains("\\")
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw MBaaSError(.invalidRequest, "fileName is not a valid value.", vendorCode: "E400005")
        }
    }

    func upload(_ name: String) async throws -> TransportResponse {
        try checkFileName(name)
        guard let body = request.body, let contentType = request.headers["Content-Type"],
              contentType.lowercased().hasPrefix("multipart/form-data"),
              let form = try? MultipartForm.decode(body, contentType: contentType)
        else { throw MBaaSError(.invalidRequest, "Unsupported Content-Type.", vendorCode: "E415001") }
        guard let file = form.part(named: "file") else {
            throw MBaaSError(.invalidRequest, "file is empty.", vendorCode: "E400003")
        }
        guard file.data.count <= dialect.configuration.maxFileSize else {
            throw MBaaSError(.invalidRequest, "File size limit exceeded.", vendorCode: "E413001")
        }
        var acl = ACL.publicReadWrite
        if let part = form.part(named: "acl"), !part.data.isEmpty {
            guard let json = try? JSON.parse(part.data) else {
                throw MBaaSError(.invalidRequest, "acl is invalid.", vendorCode: "E400002")
            }
            acl = try Self.acl(json)
        }
        let type = file.contentType.flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        do {
            _ = try await store(creating: acl).upload(FileUpload(name: name, source: .data(file.data), contentType: type, acl: acl))
        } catch let e as MBaaSError where e.kind == .duplicate {
            throw MBaaSError(.duplicate, "fileName is duplication.", vendorCode: "E409001")
        }
        let info = try await fileInfo(name, as: owner)
        return Self.json(201, .object([
            "fileName": .string(name), "createDate": .string(ISO8601.format(info?.createdAt ?? dialect.clock())),
        ]))
    }

    func fileInfo(_ name: String, as who: any ServerStore) async throws -> FileInfo? {
        try await who.listFiles(prefix: name, limit: nil).first { $0.reference.name == name }
    }

    func download(_ name: String) async throws -> TransportResponse {
        try checkFileName(name)
        guard let info = try await fileInfo(name, as: backend) else {
            throw MBaaSError(.notFound, "No data available.", vendorCode: "E404001")
        }
        let data = try await backend.download(FileReference(name: name))
        return TransportResponse(status: 200, headers: [.contentType: info.reference.contentType ?? "application/octet-stream"], body: data)
    }

    /// `PUT /files/{name}` with `{"acl":{…}}` (the bare ACL some SDKs send is accepted too).
    func updateFileACL(_ name: String) async throws -> TransportResponse {
        try checkFileName(name)
        let body = try jsonBody()
        let acl = try Self.acl(body["acl"] ?? .object(body))
        guard let info = try await fileInfo(name, as: backend) else {
            throw MBaaSError(.notFound, "No data available.", vendorCode: "E404001")
        }
        let caller = token == nil ? nil : try await backend.currentUser()
        if let current = info.acl, !current.canWrite(user: caller?.id, roles: caller?.roles ?? [], groups: caller?.groups ?? []) {
            throw MBaaSError(.forbidden, "No access with ACL.", vendorCode: "E403001")
        }
        let updated = try await owner.repairFileACL(name: name, acl: acl)
        return Self.json(200, .object(["updateDate": .string(ISO8601.format(updated.updatedAt ?? dialect.clock()))]))
    }

    func deleteFile(_ name: String) async throws -> TransportResponse {
        try checkFileName(name)
        try await backend.deleteFile(FileReference(name: name))
        return Self.empty()
    }

    /// `GET /files`: `where` on `fileName` (equality or an anchored `$regex` prefix), `order`, `limit`, `skip`,
    /// `count`. Other conditions are 400 E400002 (the emulator's file list is not a full query engine).
    func listFiles() async throws -> TransportResponse {
        let ncmb = try NCMBQuery(queryItems: queryItems)
        var prefix: String?
        var exact: String?
        if let w = ncmb.where_ {
            guard w.or == nil, w.relatedTo == nil, w.entries.allSatisfy({ $0.key == "fileName" }), w.entries.count <= 1 else {
                throw MBaaSError(.invalidRequest, "where is invalid. (the emulator lists files by fileName only)", vendorCode: "E400002")
            }
            switch w.entries.first?.constraint {
            case .equals(let v)?: exact = v.stringValue
            case .operators(let ops)? where ops.count == 1:
                guard case .regex(let pattern) = ops[0], let literal = Self.anchoredLiteral(pattern) else { fallthrough }
                prefix = literal
            case nil: break
            default:
                throw MBaaSError(.invalidRequest, "where is invalid. (fileName: equality or an anchored $regex prefix)", vendorCode: "E400002")
            }
        }
        var files = try await backend.listFiles(prefix: exact ?? prefix, limit: nil)
        // A store may match more than the name's prefix (PocketBase also matches the name a file was uploaded as).
        if let exact { files = files.filter { $0.reference.name == exact } }
        else if let prefix { files = files.filter { $0.reference.name.unicodeScalars.starts(with: prefix.unicodeScalars) } }
        let order = ncmb.order.isEmpty ? NCMBQuery.defaultOrder : ncmb.order
        files.sort { a, b in
            for key in order {
                let descending = key.hasPrefix("-")
                let name = descending ? String(key.dropFirst()) : key
                let (x, y): (String, String) = switch name {
                case "fileName": (a.reference.name, b.reference.name)
                case "updateDate": (a.updatedAt.map(ISO8601.format) ?? "", b.updatedAt.map(ISO8601.format) ?? "")
                default: (a.createdAt.map(ISO8601.format) ?? "", b.createdAt.map(ISO8601.format) ?? "")
                }
                if x != y { return descending ? x > y : x < y }
            }
            return false
        }
        let total = files.count
        let page = files.dropFirst(ncmb.skip ?? 0).prefix(ncmb.limit ?? NCMBQuery.defaultLimit)
        var out: JSONObject = ["results": .array(page.map {
            NCMBFileMetadata(fileName: $0.reference.name, mimeType: $0.reference.contentType, fileSize: $0.reference.size,
                             createDate: $0.createdAt, updateDate: $0.updatedAt, acl: $0.acl).json
        })]
        if ncmb.count { out["count"] = .int(Int64(total)) }
        return Self.json(200, .object(out))
    }

    /// `^abc` with escaped metacharacters → `abc`; `nil` for any other pattern.
    static func anchoredLiteral(_ pattern: String) -> String? {
        guard pattern.hasPrefix("^") else { return nil }
        var out = ""
        var escaped = false
        for ch in pattern.dropFirst() {
            if escaped { out.append(ch); escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if "^$.|?*+()[]{}".contains(ch) { return nil }
            out.append(ch)
        }
        return escaped ? nil : out
    }
}
