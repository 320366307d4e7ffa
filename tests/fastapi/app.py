"""A real FastAPI service for blindexec's import fidelity test (issue 17).

Every operation validates its request with FastAPI's own machinery and
answers with what it received, so the Go test (api/fastapi_test.go) can
check that the engine sent what the LLM asked for. It covers the shapes
FastAPI 0.92 / pydantic 1.10 produce: enums with defaults, Optional,
discriminated unions, recursive models, Literal, file uploads (single and
lists), form bodies, headers, cookies, basic and API-key auth.

Run: /usr/bin/python3 app.py — it binds 127.0.0.1 on a free port, prints
the port on the first line of stdout, then serves.
"""

import enum
import socket
import sys
from typing import List, Literal, Optional, Union

from fastapi import (Cookie, Depends, FastAPI, File, Form, Header, HTTPException, Path, Query,
                     UploadFile)
from fastapi.responses import PlainTextResponse
from fastapi.security import APIKeyHeader, HTTPBasic, HTTPBasicCredentials
from pydantic import BaseModel, Field

app = FastAPI(title="Fidelity Shop", version="1.0.0")


class Sort(str, enum.Enum):
    name = "name"
    date = "date"


class Color(str, enum.Enum):
    red = "red"
    green = "green"


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(9, ge=1, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True
    name: Optional[str] = None


class Adoption(BaseModel):
    pet: Union[Cat, Dog] = Field(..., discriminator="kind")
    note: Optional[str] = None


class Node(BaseModel):
    name: str
    children: List["Node"] = []


Node.update_forward_refs()


class Order(BaseModel):
    item: str
    quantity: int = Field(..., gt=0)
    color: Color = Color.red
    tags: List[str] = []


basic = HTTPBasic()
api_key = APIKeyHeader(name="X-API-Key")


@app.get("/items")
def list_items(sort: Sort = Sort.name, limit: int = Query(10, ge=1, le=100), q: Optional[str] = None,
               mode: Literal["fast", "slow"] = "fast"):
    return {"sort": sort, "limit": limit, "q": q, "mode": mode}


@app.get("/items/{item_id}")
def get_item(item_id: int = Path(..., ge=1), color: Optional[Color] = None):
    return {"item_id": item_id, "color": color}


@app.post("/orders", status_code=201)
def create_order(order: Order):
    return {"order": order}


@app.post("/adoptions")
def adopt(adoption: Adoption):
    return {"adoption": adoption, "pet_type": type(adoption.pet).__name__}


@app.post("/trees")
def plant_tree(tree: Node):
    def count(n):
        return 1 + sum(count(c) for c in n.children)
    return {"tree": tree, "nodes": count(tree)}


@app.post("/upload")
async def upload(file: UploadFile = File(...), title: str = Form(...)):
    data = await file.read()
    return {"title": title, "filename": file.filename, "content_type": file.content_type, "content": data.decode()}


@app.post("/upload-many")
async def upload_many(files: List[UploadFile] = File(...), tags: List[str] = Form([])):
    out = []
    for f in files:
        out.append({"filename": f.filename, "content_type": f.content_type, "content": (await f.read()).decode()})
    return {"files": out, "tags": tags}


@app.post("/login")
def login(username: str = Form(...), password: str = Form(...), remember: bool = Form(False),
          scopes: List[str] = Form([])):
    return {"username": username, "password_length": len(password), "remember": remember, "scopes": scopes}


@app.get("/whoami")
def whoami(x_request_id: str = Header(...), user_agent: Optional[str] = Header(None),
           session: str = Cookie(...), theme: Optional[str] = Cookie(None)):
    return {"x_request_id": x_request_id, "session": session, "theme": theme}


@app.get("/secure/basic")
def secure_basic(creds: HTTPBasicCredentials = Depends(basic)):
    if creds.username != "alice" or creds.password != "s3cret-pass":
        raise HTTPException(status_code=401, detail="bad credentials")
    return {"authenticated": True}  # the user name is a credential: masked in the output


@app.get("/secure/key")
def secure_key(key: str = Depends(api_key)):
    if key != "key-0123456789":
        raise HTTPException(status_code=403, detail="bad key")
    return {"key_ok": True}


@app.get("/report.csv", response_class=PlainTextResponse)
def report(rows: int = Query(2, ge=1, le=10)):
    return "key,total\n" + "".join(f"k{i},{i * 10}\n" for i in range(rows))


@app.delete("/legacy/{code}", deprecated=True)
def legacy(code: str):
    return {"deleted": code}


if __name__ == "__main__":
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, fd=sock.fileno(), log_level="warning", lifespan="off")
    uvicorn.Server(config).run()
    sys.exit(0)
