"""JUnit XML checks shared by the ``--junit`` tests: a schema of the common JUnit shape, its
validator, and the cases of a report by (classname, name)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# A minimal schema of the common JUnit XML shape (Ant's junit task, as read by Jenkins, GitLab
# and the GitHub test reporters), written for these tests: testsuites > testsuite > testcase
# with at most one failure / error / skipped, and the attributes those consumers require.
JUNIT_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:simpleType name="count">
    <xs:restriction base="xs:nonNegativeInteger"/>
  </xs:simpleType>
  <xs:simpleType name="seconds">
    <xs:restriction base="xs:decimal"><xs:minInclusive value="0"/></xs:restriction>
  </xs:simpleType>
  <xs:simpleType name="naiveTimestamp">
    <xs:restriction base="xs:dateTime">
      <xs:pattern value="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:complexType name="problem">
    <xs:simpleContent>
      <xs:extension base="xs:string">
        <xs:attribute name="message" type="xs:string"/>
        <xs:attribute name="type" type="xs:string" use="required"/>
      </xs:extension>
    </xs:simpleContent>
  </xs:complexType>
  <xs:complexType name="skip">
    <xs:simpleContent>
      <xs:extension base="xs:string">
        <xs:attribute name="message" type="xs:string"/>
      </xs:extension>
    </xs:simpleContent>
  </xs:complexType>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="count"/>
      <xs:attribute name="failures" type="count"/>
      <xs:attribute name="errors" type="count"/>
      <xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="properties" minOccurs="0">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:attribute name="name" type="xs:token" use="required"/>
                  <xs:attribute name="value" type="xs:string" use="required"/>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
          </xs:complexType>
        </xs:element>
        <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:choice minOccurs="0">
                <xs:element name="skipped" type="skip"/>
                <xs:element name="error" type="problem"/>
                <xs:element name="failure" type="problem"/>
              </xs:choice>
              <xs:element name="system-out" type="xs:string" minOccurs="0"/>
              <xs:element name="system-err" type="xs:string" minOccurs="0"/>
            </xs:sequence>
            <xs:attribute name="name" type="xs:token" use="required"/>
            <xs:attribute name="classname" type="xs:token" use="required"/>
            <xs:attribute name="time" type="seconds" use="required"/>
          </xs:complexType>
        </xs:element>
        <xs:element name="system-out" type="xs:string" minOccurs="0"/>
        <xs:element name="system-err" type="xs:string" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="count" use="required"/>
      <xs:attribute name="failures" type="count" use="required"/>
      <xs:attribute name="errors" type="count" use="required"/>
      <xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds" use="required"/>
      <xs:attribute name="timestamp" type="naiveTimestamp"/>
      <xs:attribute name="hostname" type="xs:token"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""


def validate(data: bytes | Path) -> None:
    """Valid against JUNIT_XSD (skips without xmlschema, a test extra)."""
    xmlschema = pytest.importorskip("xmlschema", reason="pip install xmlschema (test extra)")
    schema = xmlschema.XMLSchema(JUNIT_XSD)
    source = data.read_bytes() if isinstance(data, Path) else data
    schema.validate(source.decode("utf-8"))


def cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    out = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        assert key not in out, f"duplicate test case {key}"
        out[key] = case
    return out


def outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return tag
    return "passed"
