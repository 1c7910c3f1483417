# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.
from agentdojo.default_suites.v1.tools.types import *  # noqa: F403
from agentdojo.default_suites.v1.tools.types import CalendarEvent, CalendarEventID, CloudDriveFileID, Email, EmailID, EmailStatus, EvenStatus  # noqa: F401
from typing import Any, Dict, Literal, Union
from pydantic import BaseModel, Field

class Permissions(BaseModel):
    read: bool = True
    write: bool = False
    execute: bool = False

class File(BaseModel):
    type: Literal["file"] = "file"
    content: str
    permissions: Permissions = Field(default_factory=Permissions)

class Directory(BaseModel):
    type: Literal["directory"] = "directory"
    children: Dict[str, Union[File, "Directory"]] = Field(default_factory=dict)
    permissions: Permissions = Field(
        default_factory=lambda: Permissions(write=True)
    )


class WebFunction(BaseModel):
    handler: str
    static_parameters: dict[str, Any]


class Web(BaseModel):
    web_url: str
    web_content: str
    field_to_parameters: dict = Field(default_factory=dict)
    web_function: list[WebFunction] = Field(default_factory=list)
    web_requests: list[str] = Field(default_factory=list)
    download_source: str | None = None


WebFileID = str

class WebFile(File):
    source_name: str


class WebDirectory(Directory):
    source_name: str




