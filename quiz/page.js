/*
 * page.js — the quiz page's behaviour (quiz --html), inlined into it by quiz/page.c.
 *
 * The page already holds everything: both languages, every answer inside a <details>.
 * This script only shows one language at a time, checks an answer when an option is
 * pressed (a click, or Enter or Space on the focused option), opens its explanation, and
 * keeps the score. Its state is two things, kept in the URL fragment so a result can be
 * shared or replayed:
 *
 *   #lang=ar&answers=1,3,2,4,1,2,4,3
 *
 * lang is en or ar; answers holds, per question, the chosen option as the page's buttons
 * number it (1-4, as `quiz --answers` numbers them with the page's --seed), empty where
 * not answered yet. Each button's data-option is the bank's index of its option.
 */
(function () {
    "use strict";

    var words = JSON.parse(document.getElementById("quiz-words").textContent);
    var total = Number(document.querySelector("main").dataset.questions);
    var langs = ["en", "ar"];
    var questions = {}; /* per language, the question <article>s in the bank's order */
    langs.forEach(function (l) {
        questions[l] = Array.prototype.slice.call(document.querySelectorAll("#view-" + l + " .question"));
    });
    var correct = questions.en.map(function (article) {
        return Number(article.dataset.correct);
    });
    var state = { lang: "en", answers: [] };

    /* ---- the fragment ---- */
    /* The options of question q as its buttons show them: shown[q][i] is the bank's
     * option (1-4) of the (i + 1)-th button; the same order in both languages. */
    var shown = questions.en.map(function (article) {
        return Array.prototype.map.call(article.querySelectorAll(".option"), function (button) {
            return Number(button.dataset.option);
        });
    });

    /* state.answers holds bank options; the fragment, button numbers. */
    function readFragment() {
        var params = new URLSearchParams(location.hash.slice(1));
        state.lang = params.get("lang") === "ar" ? "ar" : "en";
        var given = (params.get("answers") || "").split(",");
        state.answers = [];
        for (var q = 0; q < total; q++) {
            var n = Number(given[q]);
            state.answers.push(Number.isInteger(n) && n >= 1 && n <= 4 ? shown[q][n - 1] : null);
        }
    }

    function writeFragment() {
        var list = state.answers.map(function (a, q) {
            return a === null ? "" : String(shown[q].indexOf(a) + 1);
        });
        history.replaceState(null, "", "#lang=" + state.lang + "&answers=" + list.join(","));
    }

    /* ---- drawing the state ---- */
    /* A copy of an option's text as the page shows it, its isolated runs included. */
    function optionText(lang, q, option) {
        var button = questions[lang][q].querySelector('.option[data-option="' + option + '"]');
        return button.querySelector(".text").cloneNode(true);
    }

    function drawQuestion(lang, q) {
        var article = questions[lang][q];
        var chosen = state.answers[q];
        article.querySelectorAll(".option").forEach(function (button) {
            var option = Number(button.dataset.option);
            var isRight = chosen !== null && option === correct[q];
            var isWrong = chosen !== null && option === chosen && !isRight;
            button.disabled = false;
            button.setAttribute("aria-disabled", String(chosen !== null));
            button.setAttribute("aria-pressed", String(option === chosen));
            button.classList.toggle("right", isRight);
            button.classList.toggle("wrong", isWrong);
            button.querySelector(".mark").textContent = isRight ? "✓" : isWrong ? "✗" : "";
        });
        var verdict = article.querySelector(".verdict");
        verdict.textContent = chosen === null ? "" : chosen === correct[q] ? words[lang].right : words[lang].wrong;
        verdict.className = "verdict" + (chosen === null ? "" : chosen === correct[q] ? " right" : " wrong");
        if (chosen !== null) article.querySelector(".answer").open = true;
    }

    function drawResult() {
        var lang = state.lang;
        var result = document.getElementById("result");
        var answered = 0, right = 0;
        var list = document.getElementById("answers");
        list.textContent = "";
        state.answers.forEach(function (chosen, q) {
            if (chosen === null) return;
            answered++;
            var isRight = chosen === correct[q];
            right += isRight;
            var item = document.createElement("li");
            item.value = q + 1;
            item.className = isRight ? "right" : "wrong";
            var mark = document.createElement("span");
            mark.setAttribute("aria-hidden", "true");
            mark.textContent = isRight ? "✓ " : "✗ ";
            var said = document.createElement("span");
            said.className = "visually-hidden";
            said.textContent = (isRight ? words[lang].right : words[lang].wrong) + " ";
            item.append(mark, said, words[lang].your_answer + ": ", optionText(lang, q, chosen));
            if (!isRight) item.append(" · " + words[lang].the_answer + ": ", optionText(lang, q, correct[q]));
            list.append(item);
        });
        result.hidden = answered === 0;
        result.lang = lang;
        result.dir = lang === "ar" ? "rtl" : "ltr";
        document.getElementById("result-title").textContent = words[lang].result_title;
        document.getElementById("score").textContent = words[lang].score.replace("%d", right).replace("%d", total);
        document.getElementById("again").textContent = words[lang].again;
    }

    function draw() {
        var lang = state.lang;
        document.documentElement.lang = lang;
        document.documentElement.dir = lang === "ar" ? "rtl" : "ltr";
        document.querySelectorAll("[data-view]").forEach(function (part) {
            part.hidden = part.dataset.view !== lang;
        });
        document.querySelectorAll(".langs a").forEach(function (link) {
            if (link.dataset.lang === lang) link.setAttribute("aria-current", "true");
            else link.removeAttribute("aria-current");
        });
        langs.forEach(function (l) {
            for (var q = 0; q < total; q++) drawQuestion(l, q);
        });
        drawResult();
    }

    /* ---- what the reader does ---- */
    document.addEventListener("click", function (event) {
        var button = event.target.closest(".option");
        if (button) {
            var q = questions[state.lang].indexOf(button.closest(".question"));
            if (q < 0 || state.answers[q] !== null) return; /* answered once, as on the terminal */
            state.answers[q] = Number(button.dataset.option);
            writeFragment();
            draw();
            return;
        }
        var link = event.target.closest(".langs a");
        if (link) {
            event.preventDefault();
            state.lang = link.dataset.lang;
            writeFragment();
            draw();
        }
    });

    document.getElementById("again").addEventListener("click", function () {
        state.answers = state.answers.map(function () {
            return null;
        });
        document.querySelectorAll(".answer").forEach(function (details) {
            details.open = false;
        });
        writeFragment();
        draw();
        questions[state.lang][0].querySelector(".option").focus();
    });

    window.addEventListener("hashchange", function () {
        readFragment();
        draw();
    });

    readFragment();
    draw();
    document.documentElement.setAttribute("data-ready", "true");
})();
